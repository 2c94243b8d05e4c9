"""Measuring the memory: `autopoiesis eval` (evaluate.py), the LoCoMo and question-set
readers (locomo.py) and knowledge recall and size (knowledge_recall.py)."""
