"""What a secret looks like, and what only looks like one: the pattern tables and the
look-alike checks of the redactor (redact.py).

BUILTIN_RULES are our own rules (layer 2 of redact.py's module doc), each with the check
that validates its matches and the family of anchors that flags the lines it reads;
ANCHORS are those anchors (layer 1), PREFILTER_SOURCE all of them at once; the rest are the
tables and pure checks the validators use to refuse look-alikes (git SHAs, UUIDs, digests,
base64 images, prose slugs, placeholders).
Standard library only: the kernel imports it on the light path.
"""

from __future__ import annotations

import base64
import binascii
import re

_PEM_LABEL = r"(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?"
_B64RUN = r"[A-Za-z0-9+/]{16,}={0,2}"
# A PEM block: header lines (Proc-Type: ...), base64 lines, a short last line, the footer.
# Without its footer (a truncated paste) the block ends with its last base64 line; a header
# followed by prose has no body and is left alone.
_PEM_TAIL = (
    r"\s+[A-Za-z0-9+/]{1,15}={0,2}(?=\s*-----END)"
    r"|[ \t]*\r?\n[ \t]*(?=[A-Za-z]*[0-9+/=])[A-Za-z0-9+/]{1,15}={0,2}(?=[ \t]*(?:\r?\n|\Z))"
)
# an OpenPGP armour's checksum line (`=Xk9q`) between the body and the footer
_ARMOR_CRC = r"\s+=[A-Za-z0-9+/]{4}(?=\s*-----END)"
_PEM = (
    r"-----BEGIN "
    rf"{_PEM_LABEL}-----(?P<body>(?:\s*[A-Za-z][A-Za-z-]+:[^\n]*\n)*\s*{_B64RUN}(?:\s+{_B64RUN})*(?:{_PEM_TAIL})?(?:{_ARMOR_CRC})?)"
    rf"(?:\s*-----END {_PEM_LABEL}-----)?"
)
# The end of a PEM block whose header is not in the text: a key pasted over two messages
# (or cut by a field's limit) leaves its last lines and footer in the second. The footer is
# found, and the body is read back from it (redact.py, _pem_tail_findings): the base64
# words before the footer on its own line (a body whose line breaks were lost), then lines
# of one base64 word each (under a Markdown quote's `>` too; the first may be opened by a
# quote mark after anything, as in JSON); a blank line or a line of anything else ends it.
PEM_FOOTER = re.compile(rf"-----END {_PEM_LABEL}-----")
PEM_BODY_LINE = re.compile(
    r"(?P<lead>[ \t]*(?:>[ \t]*)*|[^\n]*[\"'`])(?P<body>[A-Za-z0-9+/]+={0,2})[ \t]*\r?"
)
PEM_QUOTE_PREFIX = re.compile(r"(?:[ \t]*>)*")
PEM_BODY_WORD = re.compile(r"(?P<open>[\"'`]?)(?P<body>[A-Za-z0-9+/]+={0,2})")
PEM_LINE_MIN = 16  # a body's lines are 64 characters but its last: a shorter line is prose

# The value of an assignment: quoted, or a bare run that stops at whitespace, a quote, a
# bracket or a `;`/`&` that starts the next `name=` (a JDBC or URL parameter).
_BARE = r"""(?:[^\s"'`,;&<>(){}\[\]]|[;&](?![A-Za-z_][\w.\-]*=|\s|$)){1,512}"""
_VALUE = (
    r"""\s*(?:"(?P<s1>[^"\n]{1,512})"|'(?P<s2>[^'\n]{1,512})'|`(?P<s3>[^`\n]{1,512})`"""
    rf"""|(?P<s4>{_BARE}))"""
)
_ASSIGN = r"""["'\]]{0,2}\s*(?:=|:=|:|=>)"""
_KEY_START = r"(?<![A-Za-z0-9_.\-])"
_TOKEN = r"[A-Za-z0-9+/=_\-]{16,}"
_ENTROPY_VALUE = (
    rf"""\s*(?:"(?P<s1>{_TOKEN})"|'(?P<s2>{_TOKEN})'|(?P<s4>{_TOKEN})(?![^\s,;&)}}\]]))"""
)

# Before a provider prefix: nothing (distinctive prefixes such as `ghp_` are caught glued
# after letters, `MY_TOKEN_ghp_...`), or _NOT_ALNUM where the prefix is short or a word
# could end with it (`sk-` in `task-`, `hf_` in `pdf_`). `\b` is not used: `_` is a word
# character, so `\b` refused a key in Markdown italics (`_ghp_..._`) or after `X_`.
_NOT_ALNUM = r"(?<![A-Za-z0-9])"
_END = r"(?![A-Za-z0-9])"
# after a token whose alphabet has `_`: no more of it, but a closing `_` of Markdown italics
_END_URLSAFE = r"(?![A-Za-z0-9\-]|_[A-Za-z0-9_\-])"
_QVALUE = r"""(?:'(?P<s1>[^'\n]{1,512})'|"(?P<s2>[^"\n]{1,512})"|(?P<s4>[^\s'"`]{1,512}))"""

# A name before an assignment is taken possessively (`{0,60}+`): what follows it (a quote,
# a bracket, a space, `=` or `:`) is no character of a name, so giving characters back can
# never make a match, and the regex need not try.
# A pattern that starts with (?i) has its letters in lowercase: it is run without the flag
# on a lowercase copy of the text (same offsets), which is three times faster.
# (kind, pattern). A pattern's secret is its group `s` (or s1..s4), else the whole match.
# Order is priority when two findings start at the same place (an Anthropic key also
# starts with "sk-").
BUILTIN_RULES: tuple[tuple[str, str, str, str], ...] = (
    ("private_key", "private_key", "provider", _PEM),
    ("anthropic_key", "accept", "provider", r"sk-ant-(?:api|admin|oat)\d{2}-[A-Za-z0-9_\-]{32,}"),
    (
        "openai_key",
        "openai",
        "provider",
        rf"(?:{_NOT_ALNUM}sk-(?:None-)?|sk-(?:proj|svcacct|admin)-)[A-Za-z0-9_\-]{{20,}}",
    ),
    (
        "aws_access_key",
        "accept",
        "provider",
        rf"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[0-9A-Z]{{16}}{_END}",
    ),
    (
        "aws_secret_key",
        "accept",
        "keyword",
        rf"(?i){_KEY_START}(?:aws_?)?secret_?access_?key{_ASSIGN}\s*[\"']?(?P<s>[A-Za-z0-9/+=]{{40}})(?![A-Za-z0-9/+=])",
    ),
    # the AWS console's credentials CSV: `...,AKIA...,SECRET,https://...`
    (
        "aws_secret_key",
        "accept",
        "provider",
        r"""(?:AKIA|ASIA)[0-9A-Z]{16}[ \t]*[,;\t][ \t]*"?"""
        r"(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
    ),
    # beside its access key on one line ("AKIA... and the secret wJalr..."), as a CSV does
    (
        "aws_secret_key",
        "aws_secret",
        "provider",
        r"(?:AKIA|ASIA)[0-9A-Z]{16}[^\n]{0,60}?(?<![A-Za-z0-9/+=])"
        r"(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
    ),
    # said in prose: "the AWS secret key is wJalr...", "secret access key: `...`"
    (
        "aws_secret_key",
        "aws_secret",
        "prose",
        r"(?i)\bsecret(?:[ _-]access)?[ _-]key\b[^\n]{0,40}?(?<![a-z0-9/+=])"
        r"(?P<s>[a-z0-9/+]{40})(?![a-z0-9/+=])",
    ),
    (
        "aws_session_token",
        "accept",
        "keyword",
        rf"(?i){_KEY_START}(?:aws_?)?(?:session|security)_?token{_ASSIGN}\s*[\"']?(?P<s>[A-Za-z0-9/+=]{{40,}})",
    ),
    (
        "github_token",
        "accept",
        "provider",
        r"(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})",
    ),
    (
        "gitlab_token",
        "accept",
        "provider",
        r"(?:(?:glpat|gldt|glft|glsoat|glrt|glcbt|glptt|glimt|gloas|glagent)-[A-Za-z0-9_\-]{20,}|GR1348941[A-Za-z0-9_\-]{20,50})",
    ),
    (
        "huggingface_token",
        "accept",
        "provider",
        rf"{_NOT_ALNUM}(?:hf_|api_org_)[A-Za-z]{{34}}{_END}",
    ),
    ("npm_token", "accept", "provider", rf"npm_[A-Za-z0-9]{{36}}{_END}"),
    ("pypi_token", "accept", "provider", r"pypi-AgE[A-Za-z0-9_\-]{50,}"),
    (
        "sendgrid_key",
        "accept",
        "provider",
        rf"SG\.[A-Za-z0-9_\-]{{22}}\.[A-Za-z0-9_\-]{{43}}{_END_URLSAFE}",
    ),
    ("twilio_key", "accept", "provider", rf"{_NOT_ALNUM}(?:SK|AC)[0-9a-fA-F]{{32}}{_END}"),
    ("slack_token", "accept", "provider", r"xox(?:[abposr]|e\.xox[bp])-\d+-[A-Za-z0-9-]{8,}"),
    ("slack_token", "accept", "provider", r"xapp-\d-[A-Z0-9]{6,}-\d{6,}-[A-Za-z0-9]{16,}"),
    (
        "slack_webhook",
        "accept",
        "provider",
        r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_-]{20,}",
    ),
    ("google_api_key", "accept", "provider", rf"AIza[0-9A-Za-z_\-]{{35}}{_END_URLSAFE}"),
    ("google_oauth_secret", "accept", "provider", rf"GOCSPX-[A-Za-z0-9_\-]{{28}}{_END_URLSAFE}"),
    # a Google OAuth access token (`gcloud auth print-access-token`) and a refresh token
    ("google_oauth_token", "accept", "provider", r"ya29\.[0-9A-Za-z_\-]{20,}"),
    ("google_oauth_token", "accept", "provider", r"1//0[0-9A-Za-z_\-]{40,}"),
    (
        "fcm_server_key",
        "accept",
        "provider",
        rf"{_NOT_ALNUM}AAAA[A-Za-z0-9_\-]{{7}}:[A-Za-z0-9_\-]{{140,}}",
    ),
    (
        "stripe_key",
        "accept",
        "provider",
        rf"{_NOT_ALNUM}(?:sk|rk)_(?:live|test)_[0-9a-zA-Z]{{20,}}",
    ),
    ("stripe_webhook_secret", "accept", "provider", r"whsec_[A-Za-z0-9+/=]{32,}"),
    ("digitalocean_token", "accept", "provider", rf"do[por]_v1_[a-f0-9]{{64}}{_END}"),
    ("shopify_token", "accept", "provider", rf"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{{32}}{_END}"),
    ("databricks_token", "accept", "provider", rf"{_NOT_ALNUM}dapi[a-f0-9]{{32}}(?:-\d)?{_END}"),
    # not after `-`, `/` or `.`: `cache-key-<md5>` and `s3://bucket/key-<md5>` are names
    ("mailgun_key", "accept", "provider", rf"(?<![A-Za-z0-9\-/.])key-[0-9a-f]{{32}}{_END}"),
    (
        "square_token",
        "accept",
        "provider",
        rf"(?:{_NOT_ALNUM}EAAA[A-Za-z0-9_\-]{{60}}|sq0(?:atp|csp)-[A-Za-z0-9_\-]{{22,43}}){_END_URLSAFE}",
    ),
    ("doppler_token", "accept", "provider", r"dp\.(?:pt|st|ct|sa|scim|audit)\.[A-Za-z0-9]{40,44}"),
    ("linear_key", "accept", "provider", r"lin_(?:api|oauth)_[A-Za-z0-9]{40}"),
    (
        "notion_token",
        "accept",
        "provider",
        rf"(?:{_NOT_ALNUM}secret_[A-Za-z0-9]{{43}}{_END}|ntn_[0-9]{{11}}[A-Za-z0-9]{{35}})",
    ),
    (
        "age_secret_key",
        "accept",
        "provider",
        r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
    ),
    ("vault_token", "accept", "provider", r"hv[sbr]\.[A-Za-z0-9_\-]{24,}"),
    (
        "grafana_token",
        "accept",
        "provider",
        r"(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}={0,2})",
    ),
    ("atlassian_token", "accept", "provider", r"AT[AC]TT3[A-Za-z0-9_\-=]{100,}"),
    ("postman_key", "accept", "provider", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    ("newrelic_key", "accept", "provider", r"NR(?:AK|AA|II|JS)-[A-Za-z0-9]{27}"),
    ("tailscale_key", "accept", "provider", r"tskey-(?:[a-z]+-)?[A-Za-z0-9]{6,}-[A-Za-z0-9]{16,}"),
    ("terraform_token", "accept", "provider", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=\-]{60,}"),
    ("sentry_token", "accept", "provider", r"sntry[su]_[A-Za-z0-9+/=_\-]{60,}"),
    ("docker_hub_token", "accept", "provider", r"dckr_pat_[A-Za-z0-9_\-]{27,}"),
    (
        "ai_provider_key",
        "accept",
        "provider",
        rf"(?:gsk_[A-Za-z0-9]{{52}}|pplx-[A-Za-z0-9]{{48}}|nvapi-[A-Za-z0-9_\-]{{64}}|lsv2_(?:pt|sk)_[a-f0-9]{{32}}_[a-f0-9]{{10}}|{_NOT_ALNUM}r8_[A-Za-z0-9]{{37}}){_END}",
    ),
    (
        "platform_token",
        "accept",
        "provider",
        rf"(?:sbp_[a-f0-9]{{40}}|pscale_(?:pw|tkn|oauth)_[A-Za-z0-9_\-.=]{{32,64}}|HRKU-[A-Za-z0-9_\-]{{60}}){_END}",
    ),
    (
        "devtools_token",
        "accept",
        "provider",
        r"(?:figd_[A-Za-z0-9_\-]{40}|nfp_[A-Za-z0-9]{36}|pul-[a-f0-9]{40}"
        r"|CCIPAT_[A-Za-z0-9]{22}_[a-f0-9]{40}|sgp_(?:[a-f0-9]{16}_)?[a-f0-9]{40}"
        rf"|ATBB[A-Za-z0-9_=.\-]{{32}}|bkua_[a-f0-9]{{40}}){_END}",
    ),
    ("openrouter_key", "accept", "provider", rf"sk-or-v1-[0-9a-f]{{64}}{_END}"),
    ("mapbox_token", "accept", "provider", r"sk\.eyJ[A-Za-z0-9_\-]{20,}\.[A-Za-z0-9_\-]{20,}"),
    ("dropbox_token", "accept", "provider", rf"{_NOT_ALNUM}sl\.[A-Za-z0-9_\-]{{130,}}"),
    # an Azure AD client secret: `8Q~` after three characters
    ("azure_client_secret", "accept", "provider", r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}"),
    (
        "webhook_url",
        "accept",
        "provider",
        r"https://(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{60,}"
        r"|https://[A-Za-z0-9\-]+\.webhook\.office\.com/webhookb2/[^\s\"'<>]+",
    ),
    ("okta_token", "accept", "auth", r"SSWS\s+(?P<s>[A-Za-z0-9_\-]{40,44})(?![A-Za-z0-9_\-])"),
    (
        "jwt",
        "accept",
        "provider",
        r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",
    ),
    (
        "azure_key",
        "accept",
        "keyword",
        r"(?i)(?<![A-Za-z0-9])(?:accountkey|sharedaccesskey|sharedsecretvalue)\s*=\s*(?P<s>[A-Za-z0-9+/]{20,}={0,2})",
    ),
    (
        "kubeconfig_key",
        "accept",
        "keyword",
        r"""(?i)client-key-data["']?\s*:\s*["']?(?P<s>[A-Za-z0-9+/]{20,}={0,2})""",
    ),
    (
        "putty_private_key",
        "accept",
        "provider",
        r"Private-Lines:[ \t]*\d+[ \t]*\r?\n(?P<s>(?:[ \t]*[A-Za-z0-9+/=]{4,}[ \t]*(?:\r?\n|\Z))+)",
    ),
    (
        "basic_auth",
        "accept",
        "keyword",
        r"(?i)\bauthorization[\"']?\s*[:=]\s*[\"']?basic\s+(?P<s>[A-Za-z0-9+/]{8,}={0,2})",
    ),
    ("bearer_token", "bearer", "auth", r"(?i)\bbearer\s+(?P<s>[A-Za-z0-9_\-.=~+/]{16,})"),
    # a Cookie header's values (`Cookie: sessionid=...; csrftoken=...`): a session's
    # credentials when random; `theme=dark` stays
    (
        "cookie",
        "cookie",
        "cookie",
        r"(?i)(?:(?<![a-z0-9_])(?:set-)?cookie[\"']?\s*[:=]\s*[\"']?|;[ \t]*)"
        r"(?P<k>[a-z0-9_.%\-]{1,64})=(?P<s>[^;\s\"',]{16,4096})",
    ),
    # the signature of a signed URL (Azure's SAS `sig=`, S3's and GCS's presigned URLs):
    # whoever holds the URL holds the access it grants
    (
        "url_signature",
        "bearer",
        "url",
        r"(?i)[?&](?:sig|signature|x-amz-signature|x-goog-signature)=(?P<s>[a-z0-9%+/=_\-]{20,})",
    ),
    # an Authorization header of another scheme: `token X` (GitHub), `Token X` (Django
    # REST framework), `ApiKey X` (Elasticsearch)
    (
        "auth_token",
        "bearer",
        "keyword",
        r"(?i)\bauthorization[\"']?\s*[:=]\s*[\"']?(?!basic\s|bearer\s)[a-z][a-z0-9_\-]{1,30}"
        r"\s+(?P<s>[a-z0-9_\-.=~+/]{16,})",
    ),
    # the userinfo ends at the last `@` before the host, as URL parsers read it: a
    # password may hold `@` (`https://admin:P@ssw0rd!@db`), but an `@` after a `?` or `#`
    # past an `@` is the query's (`https://u:pw@host?next=a@b`). Each run stops at an `@`,
    # so giving back characters never makes a match: one scan per `://`.
    (
        "url_password",
        "url_password",
        "url",
        r"(?i)(?<![a-z0-9+.\-])(?P<scheme>[a-z][a-z0-9+.\-]{0,30})://[^\s/:@\"'<>]*:"
        r"(?P<s>[^\s/@\"'<>]+(?:@[^\s/@?#\"'<>]+)*)@",
    ),
    # a userinfo that is one long token and no password (`https://<token>@github.com/...`,
    # as git takes a personal access token): random, never a user's name
    (
        "url_token",
        "url_token",
        "url",
        r"(?i)(?<![a-z0-9+.\-])(?P<scheme>[a-z][a-z0-9+.\-]{0,30})://(?P<s>[a-z0-9_.~%+\-]{20,256})@",
    ),
    # passwords on a command line: sshpass -p, mysql -pSECRET, curl -u user:SECRET, --password X
    ("password", "command", "command", rf"\bsshpass\s+(?:-[A-Za-oq-z]\S*\s+)*-p[ \t]*{_QVALUE}"),
    (
        "password",
        "command",
        "command",
        r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mariadb|mariadb-dump)\b"
        rf"[^\n|;&]{{0,200}}?[ \t]-p{_QVALUE}",
    ),
    (
        "password",
        "command",
        "command",
        r"""\bcurl\b[^\n|;&]{0,300}?[ \t](?:-u|--user)[ \t=]*["']?[^\s:'"]*:(?P<s>[^\s'"@]+)""",
    ),
    (
        "password",
        "command",
        "command",
        r"(?i)(?<![\w-])--(?:[a-z0-9]+-)*"
        r"(?P<flag>password|passwd|pass|passphrase|token|secret|api-?key|auth-token|access-token)"
        rf"(?:=|[ \t]+){_QVALUE}",
    ),
    (
        "password",
        "command",
        "command",
        r"\b(?:docker|podman|buildah|nerdctl|az)\s+login\b"
        rf"[^\n|;&]{{0,200}}?[ \t](?:-p|--password)[ \t=]+{_QVALUE}",
    ),
    # redis-cli -a PASS, zip -P PASS (unzip, zipcloak), 7z -pPASS
    (
        "password",
        "command",
        "command",
        rf"\bredis-cli\b[^\n|;&]{{0,200}}?[ \t]-a[ \t]+{_QVALUE}",
    ),
    (
        "password",
        "command",
        "command",
        r"(?<![\w.-])(?:un)?zip(?:cloak)?[ \t]"
        rf"[^\n|;&]{{0,200}}?(?<=[ \t])(?:-P|--password)[ \t]+{_QVALUE}",
    ),
    ("password", "command", "command", rf"\b7za?[ \t][^\n|;&]{{0,200}}?(?<=[ \t])-p{_QVALUE}"),
    # .netrc: `machine HOST login USER password SECRET`, on one line or one per line
    (
        "password",
        "prose_password",
        "prose",
        r"(?:\b(?:machine|login)\b[^\n]{0,200}?[ \t]|(?:^|(?<=\n))[ \t]*)"
        r"password[ \t]+(?P<s>[^\s]{4,128})",
    ),
    # said in prose: "my password is hunter2-Xq9!", "the passphrase for the key is `...`"
    (
        "password",
        "prose_password",
        "prose",
        r"(?i)\b(?:password|passphrase|passwd|passcode|pwd|pw)\b"
        r"(?:[^\n.:=]{0,40}?[ \t](?:is|was)(?:[ \t]+(?:now|still|set[ \t]+to))?|[ \t]*[:=])"
        r"""[ \t]+["'`]?(?P<s>[^\s"'`]{4,128})""",
    ),
    (
        "password",
        "password",
        "keyword",
        rf"(?i){_KEY_START}(?P<k>[A-Za-z0-9_.\-]{{0,40}}?(?:pass|pwd|contrase(?:ñ|n)a)[A-Za-z0-9_\-]{{0,20}}+){_ASSIGN}{_VALUE}",
    ),
    (
        "secret",
        "secret",
        "keyword",
        rf"(?i){_KEY_START}(?P<k>[A-Za-z0-9_.\-]{{0,40}}?(?:secret|token|api[_-]?key|access[_-]?key|auth[_-]?key|private[_-]?key|"
        rf"signing[_-]?key|encryption[_-]?key|client[_-]?key|credentials?|auth)[A-Za-z0-9_\-]{{0,20}}+){_ASSIGN}{_VALUE}",
    ),
    # an XML element named after its secret: Maven's settings.xml `<password>...</password>`,
    # `<apiKey>`, `<token>` (the name ends with the word: `<passwordPolicy>` names no secret)
    (
        "password",
        "password",
        "keyword",
        r"(?i)<(?P<k>[a-z0-9_.\-]{0,40}?(?:pass(?:word|wd|phrase)?|pwd))>(?P<s4>[^<>\n]{1,512})</",
    ),
    (
        "secret",
        "secret",
        "keyword",
        r"(?i)<(?P<k>[a-z0-9_.\-]{0,40}?(?:secret|token|api[_-]?key|access[_-]?key|auth[_-]?key"
        r"|private[_-]?key|credentials?))>(?P<s4>[^<>\n]{1,512})</",
    ),
    # a YAML `key: value` needs the space: `bot123:abc` or `host:port` is no assignment
    (
        "high_entropy",
        "high_entropy",
        "entropy",
        rf"""{_KEY_START}(?P<k>[A-Za-z_][A-Za-z0-9_.\-]{{0,60}}+)["'\]]{{0,2}}(?:\s*(?:=|:=|=>)|:(?=[\s"'])){_ENTROPY_VALUE}""",
    ),
)

# The anchors: a rule of FAMILY can only match where one of ANCHORS[FAMILY] occurs (a
# provider prefix, a keyword next to an assignment, an assignment of a long token, `://`
# with an `@`, ...). They are RE2 (one linear pass each); a line none of them flags is not
# looked at again. A family's rules run only on the lines its anchors flag, so the anchors
# of one family cannot hide another's (each family is its own pass). detect-secrets'
# plugins run on the lines the provider and keyword anchors flag: their prefixes are here.
ANCHORS: dict[str, str] = {
    "provider": (
        r"-----BEGIN |-----END [A-Z0-9 ]*PRIVATE KEY|Private-Lines:"
        r"|sk-|[sr]k_(?:live|test)_|AKIA|ASIA|ABIA|ACCA|A3T"
        r"|gh[pousr]_|github_pat_|gl[a-z]{2,6}-|GR1348941|hf_|api_org_|npm_|pypi-|SG\."
        r"|(?:SK|AC)[0-9a-fA-F]{32}|xox|xapp-|hooks\.slack|AIza|GOCSPX-|ya29\.|1//0|AAAA[A-Za-z0-9_\-]{7}:"
        r"|whsec_|do[por]_v1_|shp(?:at|ca|pa|ss)_|dapi|key-[0-9a-f]{32}|EAAA|sq0"
        r"|dp\.(?:pt|st|ct|sa|scim|audit)\.|lin_(?:api|oauth)_|secret_|ntn_|AGE-SECRET-KEY-"
        r"|hv[sbr]\.|glsa_|glc_"
        r"|AT[AC]TT|PMAK-|NR(?:AK|AA|II|JS)-|tskey-|\.atlasv1\.|sntry|dckr_pat_|gsk_|pplx-"
        r"|nvapi-|lsv2_|r8_|sbp_|pscale_|HRKU-|eyJ|figd_|nfp_|pul-|CCIPAT_|sgp_|ATBB|bkua_"
        r"|sl\.[A-Za-z0-9_\-]{100}|\dQ~|discord(?:app)?\.com/api/webhooks|webhook\.office\.com"
        # detect-secrets' own: Artifactory, Discord, Telegram, Mailchimp
        r"|AKC|AP[0-9A-F][A-Za-z0-9]{8}|[MNO][A-Za-z0-9_-]{23,25}\.|\d{8,10}:|-us\d"
    ),
    "keyword": (
        r"(?i:pass|pwd|secret|token|key|auth|cred|contrase(?:ñ|n)a)"
        r"""[A-Za-z0-9_.\-"'\]]{0,30}\s*(?:[:=]|=>|%3[dD])"""
        r"|(?i:pass(?:word|wd|phrase)?|pwd|secret|token|key|credentials?)>[^<\n]"
    ),
    "entropy": r"""(?:[:=]|=>)\s*["'`]?[A-Za-z0-9+/=_\-]{16}""",
    "misc": (
        r"://[^\s/]*@|(?i:bearer|ssws)\s|sshpass|mysql|mariadb|curl"
        r"|(?i:--(?:[a-z0-9]+-)*(?:pass|token|secret|api-?key)[a-z\-]*[= \t])"
        r"|(?i:password|passphrase|passwd|passcode|pwd|pw)\b|login[^\n]{0,200}[ \t]-p[ \t=]"
        r"|(?i:secret[ _-](?:access[ _-])?key)"
        r"|redis-cli|\b(?:un)?zip(?:cloak)?[ \t]|\b7za?[ \t]"
        r"|(?i:[?&](?:sig|signature|x-amz-signature|x-goog-signature)=)"
    ),
    "cookie": r"(?i:cookie)[\"']?\s*[:=]",
}
# the families whose rules run on a line a family's anchor flags: an assignment to a
# keyword is also an assignment (a value the keyword rules refuse may still be random)
FAMILIES_OF: dict[str, tuple[str, ...]] = {
    "provider": ("provider",),
    "keyword": ("keyword", "entropy"),
    "entropy": ("entropy",),
    "misc": ("url", "auth", "command", "prose"),
    "cookie": ("cookie",),
}
# Within its family's lines, a rule that cannot match without one of these words (in
# lowercase) is not run on lines that have none of them.
WORDS_NEEDED: dict[tuple[str, str], tuple[str, ...]] = {
    ("keyword", "aws_secret_key"): ("access",),
    ("keyword", "aws_session_token"): ("session", "security"),
    ("keyword", "azure_key"): ("accountkey", "sharedaccesskey", "sharedsecretvalue"),
    ("keyword", "basic_auth"): ("basic",),
    ("keyword", "auth_token"): ("authorization",),
    ("keyword", "kubeconfig_key"): ("client-key-data",),
}
# Nothing can be a secret without one of the anchors: text with none returns untouched
PREFILTER_SOURCE = "|".join(f"(?:{a})" for a in ANCHORS.values())

# A same-length view of JSON escapes: `\n` (two characters) reads as a space and a newline.
ESCAPE_VIEW = {"n": " \n", "r": " \r", "t": "  ", '"': ' "', "'": " '"}

PLACEHOLDER_WORDS = frozenset(
    "str string int bool bytes none null nil true false undefined optional required empty any "
    "object dict list "
    "secret secrets password passwords token tokens key keys value values env environ getenv yes "
    "no on off "
    "changeme xxx xxxx xxxxxx redacted hidden masked omitted placeholder example sample dummy "
    "test todo tbd".split()
)
# keys whose value is an identifier, never a secret: a digest, a revision, an image, and a
# model's id ("model": "claude-opus-4-5-20251101", as a session's JSON carries it)
HASHY_KEY = re.compile(
    r"(?i)(?:sha\d*|md5|hash|digest|checksum|integrity|commit|parent|tree|etag|uuid|guid|(?:^|[_.\-])ids?$|[a-z]Ids?$"
    r"|ref|rev|revision|version|image|png|jpe?g|gif|icon|avatar|thumbnail|font"
    r"|(?:^|[_.\-])model(?:_?(?:id|name))?$)"
)
IMAGE_MAGIC = ("iVBORw0KGgo", "/9j/", "R0lGOD", "UklGR", "JVBERi", "PHN2Zy", "AAAA")
UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
MARKER = re.compile(r"\[redacted:[^\]\s]{1,80}\]")
DIGEST_LENGTHS = {32, 40, 56, 64, 96, 128}
CREDENTIAL_SCHEMES_NOT = {"mailto", "http-equiv", "urn", "news", "tel"}


# compiled once: the checks below run on every candidate value
_SLUG_SEPARATORS = re.compile(r"[-_.]")
_WORD = re.compile(r"[a-z]{2,}")
_PLACEHOLDER_PHRASE = re.compile(r"(?i)(?:your|my|the|some|insert|enter|put)[-_ ]?[a-z_\-]*")
_REPEATED = re.compile(r"(.)\1{3,}")
HEX = re.compile(r"[0-9a-fA-F]+")


def groups_secret(m: re.Match[str]) -> tuple[int, int] | None:
    names = m.re.groupindex
    for g in ("s", "s1", "s2", "s3", "s4"):
        if g in names and m.group(g) is not None:
            return m.span(g)
    return m.span(0)


def char_classes(v: str) -> int:
    return sum(
        (any(c.islower() for c in v), any(c.isupper() for c in v), any(c.isdigit() for c in v))
    )


def is_prose_slug(v: str) -> bool:
    """`2FA-recovery-codes-are-in-the-vault`, `prod-eu-west-1-cluster-a1`: words joined by
    dashes."""
    parts = [p for p in _SLUG_SEPARATORS.split(v) if p]
    if len(parts) < 3:
        return False
    words = sum(1 for p in parts if _WORD.fullmatch(p))
    return words / len(parts) >= 0.6


# A name made of words, as code and model hubs write them: camelCase and PascalCase,
# joined by dashes, dots or slashes too ("NonFunctionalRequirements",
# "addLanguageToCodeBlocks", "SpongeEngine/Mistral-Small-24B-Instruct").
# Its parts are words of three letters or more, short acronyms and numbers; a random token
# cut the same way leaves parts of one or two letters ("Rx5okAo5Bm4": Rx, 5ok, Ao, ...).
_NAME_PART = re.compile(r"[A-Z]{2,}(?![a-z])|[A-Z]?[a-z]+|\d+[A-Za-z]?")
_NAME_SEPARATORS = re.compile(r"[-_./]")
_VOWELS = frozenset("aeiouyAEIOUY")
_CONSONANTS = re.compile(r"[b-df-hj-np-tv-xzB-DF-HJ-NP-TV-XZ]{5}")
# the words of two letters names are made of ("addLanguageToCodeBlocks", "userIdOf")
_SHORT_WORDS = frozenset(
    "to of in on by at is id as if or up no do go be my an db ui io os ok".split()
)


def is_compound_name(v: str) -> bool:
    """Whether V is a name made of words (see _NAME_PART): two capitalised words or more
    (without case, words cannot be told from random letters), each word of three letters
    or more (or a short word, or an acronym of up to five capitals), three in four with a
    vowel, a quarter of their letters vowels and no five consonants in a row, and no more
    numbers than words."""
    parts: list[str] = []
    for piece in _NAME_SEPARATORS.split(v):
        found = _NAME_PART.findall(piece)
        if "".join(found) != piece:
            return False  # a character that is part of no word or number
        parts += found
    words = [p for p in parts if p[0].isalpha()]
    if len(words) < 2 or len(parts) - len(words) > len(words):
        return False
    if any(len(w) < 3 and not (w.isupper() or w.lower() in _SHORT_WORDS) for w in words):
        return False
    if any(w.isupper() and len(w) > 5 for w in words):
        return False
    spoken = [w for w in words if not w.isupper()]  # acronyms are spelt, not spoken
    if sum(1 for w in spoken if w[0].isupper() and len(w) >= 3) < 2:
        return False  # no case to tell its words by: "fontlab8_content" reads as a token
    if sum(1 for w in spoken if not _VOWELS & set(w)) * 4 > len(words):
        return False
    # words are spoken: a quarter of their letters vowels, no five consonants in a row
    # (random letters: a fifth vowels, and runs like "hdwpnd")
    letters = "".join(spoken)
    if sum(1 for c in letters if c in _VOWELS) * 4 < len(letters):
        return False
    return not any(_CONSONANTS.search(w) for w in spoken)


def looks_random(v: str, min_len: int = 8) -> bool:
    """A token that mixes character classes (a digit, or 20+ characters) and is not a slug of
    words."""
    if len(v) < min_len or char_classes(v) < 2 or is_prose_slug(v):
        return False
    return any(c.isdigit() for c in v) or len(v) >= 20


def is_placeholder(v: str) -> bool:
    low = v.lower().strip(".")
    if not v or low in PLACEHOLDER_WORDS or len(v) < 3:
        return True
    if not any(c.isalnum() for c in v):
        return True  # ******, ...., ----
    if v[0] in "$%<{[" or v.startswith(("os.", "process.env", "env.", "getenv", "[redacted:")):
        return True
    return bool(_PLACEHOLDER_PHRASE.fullmatch(v) or _REPEATED.fullmatch(v))


# What a keyword's value is when it names or measures something rather than holding a
# secret (see is_reference)
_NUMBER = re.compile(r"[+-]?\d+(?:[.,_]\d+)*")
_PLAIN_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]{0,30}://[^\s@]+")
_URL_PIECES = re.compile(r"[/?&=#.:;,+%]")
# ANTHROPIC_API_KEY: words or acronyms joined by `_`, a number at most two digits after a
# word; a part of four letters or more has a vowel (`QW7P2_XKZQ` is random)
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_ENV_PART = re.compile(r"[A-Z]{1,3}\d{0,2}|[A-Z]*[AEIOUY][A-Z]*\d{0,2}|\d+")
# config.api_key, settings.SECRET_KEY, this.props.apiKey: names joined by dots, each
# letters and `_` with at most two digits at its end (`Xq9z.Pw7Lm2` is random)
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_NAME_OF_PART = re.compile(r"_*[A-Za-z][A-Za-z_]*\d{0,2}")
# X-API-Key, X-Auth-Token: an HTTP header's name, in its words' case, that names the
# credential it carries
_HEADER_NAME = re.compile(r"(?:[A-Z][a-z]+|[A-Z]{1,5})(?:-(?:[A-Z][a-z]+|[A-Z]{1,5}))+")
_CREDENTIAL_WORD = re.compile(r"(?i)key|token|auth|secret|signature|session|password")


def is_reference(v: str) -> bool:
    """Whether V, a keyword's value, names or measures something instead of holding a
    secret: a plain number of at most five digits, or with a decimal point
    (`MAX_PASSWORD_LENGTH = 128`, `expiry = 3600`), a URL with no credentials in it
    (`TOKEN_URL = 'https://oauth2.googleapis.com/token'`), an environment variable's name
    (`api_key_env: ANTHROPIC_API_KEY`), a dotted reference to another name
    (`api_key = config.api_key`) or a header's name (`API_KEY_HEADER = 'X-API-Key'`).
    A call is told by its line (redact_library.is_call)."""
    if _NUMBER.fullmatch(v):
        # a measure (a length, a port, seconds) has few digits; six or more may be a PIN or
        # a password of digits, which goes
        return "." in v or sum(c.isdigit() for c in v) <= 5
    if _PLAIN_URL.fullmatch(v):
        return not any(looks_random(p, 16) for p in _URL_PIECES.split(v.split("://", 1)[1]))
    if _ENV_NAME.fullmatch(v):
        return all(_ENV_PART.fullmatch(p) for p in v.split("_"))
    if _DOTTED.fullmatch(v):
        return all(_NAME_OF_PART.fullmatch(p) for p in v.split("."))
    return bool(_HEADER_NAME.fullmatch(v) and _CREDENTIAL_WORD.search(v))


def decoded_text(v: str) -> str | None:
    """What V says when it is base64 of JSON or text (random secrets decode to binary
    junk), else None. Such a value is data unless what it says holds a secret: a
    Kubernetes Secret's `data:` values, an env file or a service account's JSON encoded
    to pass through a variable (redact_checks judges it by its text)."""
    try:
        raw = base64.b64decode(
            v + "=" * (-len(v) % 4),
            altchars=b"-_" if ("-" in v or "_" in v) else None,
            validate=True,
        )
    except (binascii.Error, ValueError):
        return None
    if len(raw) < 8:
        return None
    printable = sum(1 for b in raw if 32 <= b < 127 or b in (9, 10, 13))
    if printable / len(raw) <= 0.95:
        return None
    return raw.decode("latin-1")


NOT_SECRET_KEY = re.compile(
    r"(?:^|[_.\-])(?:max|min|num|n|count|total|input|output|prompt|completion|cached|reasoning)_?tokens?|tokens?_(?:in|out|count|used|limit)"
    r"|author|oauth_?url|auth_?url|authority|key_?(?:name|id|type|path|file|prefix|length|size|format)$|keyboard|monkey|turkey"
)
