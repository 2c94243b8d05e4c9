"""A corpus of secrets and look-alikes for redaction tests and the secrets benchmark.

Each `SecretSample` is a message body an agent could plausibly write or read (a config
file, a JSON reply, a shell session), carrying one kind of secret; `secrets` are the
substrings that must not survive redaction, byte for byte. The values are fake but have
the real shapes (prefixes, lengths, alphabets) of what providers issue, modelled on the
public test fixtures of detect-secrets and gitleaks. They are generated from fixed seeds,
so the corpus is the same on every run and no real credential is in the source.

`LOOKALIKES` are texts that must come out of redaction unchanged: git SHAs, UUIDs, base64
images and JSON, digests, `sk-learn`, `git@` URLs, prose about keys, and the false
positives that used to destroy text around them.
"""

from __future__ import annotations

import base64
import json
import random
import string
from dataclasses import dataclass

_ALNUM = string.ascii_letters + string.digits
_UPPER_DIGITS = string.ascii_uppercase + string.digits
_B64 = string.ascii_letters + string.digits + "+/"
_URLSAFE = string.ascii_letters + string.digits + "-_"
_HEX = "0123456789abcdef"


def fake(seed: str, length: int, alphabet: str = _ALNUM) -> str:
    """A deterministic random string: the same SEED always gives the same value."""
    rng = random.Random(seed)
    while True:
        value = "".join(rng.choice(alphabet) for _ in range(length))
        # a realistic token mixes classes; re-draw the rare all-letter draw
        mixed = any(c.isdigit() for c in alphabet) and any(c.isalpha() for c in alphabet)
        if not mixed or (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)):
            return value


@dataclass(frozen=True)
class SecretSample:
    kind: str
    text: str
    secrets: tuple[str, ...]


def _pem(kind: str, seed: str, lines: int = 6, escape: bool = False) -> tuple[str, str]:
    body = [fake(f"{seed}{i}", 64, _B64) for i in range(lines)] + [
        fake(f"{seed}-end", 28, _B64) + "=="
    ]
    nl = "\\n" if escape else "\n"
    block = (
        f"-----BEGIN {kind}PRIVATE KEY-----{nl}"
        + nl.join(body)
        + f"{nl}-----END {kind}PRIVATE KEY-----"
    )
    return block, "".join(body)


def _samples() -> list[SecretSample]:
    s: list[SecretSample] = []

    def add(kind: str, text: str, *secrets: str) -> None:
        s.append(SecretSample(kind, text, tuple(secrets)))

    k = "sk-" + fake("openai-legacy", 48)
    add("openai_legacy", f"I exported OPENAI_API_KEY={k} before running the script.", k)
    k = (
        "sk-proj-"
        + fake("openai-proj-a", 74, _URLSAFE)
        + "T3BlbkFJ"
        + fake("openai-proj-b", 74, _URLSAFE)
    )
    add("openai_project", f'client = OpenAI(api_key="{k}")', k)
    k = "sk-ant-api03-" + fake("anthropic", 93, _URLSAFE) + "AA"
    add("anthropic", f"The Anthropic key is {k}; keep it out of the repo.", k)
    akid = "AKIA" + fake("aws-akid", 16, _UPPER_DIGITS)
    add("aws_access_key_id", f"aws configure set aws_access_key_id {akid}", akid)
    sak = fake("aws-sak", 40, _B64)
    add(
        "aws_credentials_file",
        f"[default]\naws_access_key_id = {akid}\naws_secret_access_key = {sak}\nregion = "
        "eu-west-1\n",
        akid,
        sak,
    )
    asia = "ASIA" + fake("aws-sts-id", 16, _UPPER_DIGITS)
    sts_secret = fake("aws-sts-secret", 40, _B64)
    sts_token = "FwoGZXIvYXdzE" + fake("aws-sts-token", 340, _B64)
    sts = {
        "Credentials": {
            "AccessKeyId": asia,
            "SecretAccessKey": sts_secret,
            "SessionToken": sts_token,
            "Expiration": "2026-03-01T12:00:00+00:00",
        },
        "AssumedRoleUser": {
            "AssumedRoleId": "AROA3XFRBF535PLBIFPI4:deploy",
            "Arn": "arn:aws:sts::123456789012:assumed-role/deploy/ci",
        },
    }
    add("aws_sts_json", json.dumps(sts, indent=2), asia, sts_secret, sts_token)
    esc_secret = fake("aws-escaped", 40, _B64)
    escaped = json.dumps(
        {
            "file": "~/.aws/credentials",
            "content": f"[default]\naws_access_key_id = {akid}\naws_secret_access_key = "
            f"{esc_secret}\n",
        }
    )
    add("aws_secret_json_escaped_newline", f"tool result: {escaped}", akid, esc_secret)
    k = "ghp_" + fake("github-classic", 36)
    add("github_classic", f"git clone https://{k}@github.com/acme/infra.git", k)
    k = "github_pat_" + fake("github-fg-a", 22) + "_" + fake("github-fg-b", 59)
    add("github_fine_grained", f"GH_TOKEN={k} gh pr list", k)
    k = "ghs_" + fake("github-app", 36)
    add("github_app_token", f"the installation token ({k}) expires in an hour", k)
    k = "glpat-" + fake("gitlab", 20, _URLSAFE)
    add(
        "gitlab_pat",
        f'curl --header "PRIVATE-TOKEN: {k}" https://gitlab.example.com/api/v4/projects',
        k,
    )
    k = "hf_" + fake("huggingface", 34, string.ascii_letters)
    add("huggingface", f"huggingface-cli login --token {k}", k)
    k = "npm_" + fake("npm", 36)
    add("npm", f"cat ~/.npmrc\n//registry.npmjs.org/:_authToken={k}\n", k)
    k = "-".join(fake(f"npm-legacy{n}", n, _HEX) for n in (8, 4, 4, 4, 12))
    add("npm_legacy_uuid", f"//registry.npmjs.org/:_authToken={k}", k)
    k = "pypi-AgEIcHlwaS5vcmc" + fake("pypi", 150, _URLSAFE)
    add("pypi", f"[pypi]\n  username = __token__\n  password = {k}\n", k)
    k = "SG." + fake("sendgrid-a", 22, _URLSAFE) + "." + fake("sendgrid-b", 43, _URLSAFE)
    add("sendgrid", f"SENDGRID_API_KEY='{k}'", k)
    k = "SK" + fake("twilio-key", 32, _HEX)
    add("twilio_api_key", f"Twilio API key SID {k} with its secret below", k)
    k = fake("twilio-token", 32, _HEX)
    sid = "AC" + fake("twilio-sid", 32, _HEX)
    add("twilio_auth_token", f"TWILIO_ACCOUNT_SID={sid}\nTWILIO_AUTH_TOKEN={k}\n", sid, k)
    k = (
        f"xoxb-{fake('slack-a', 12, string.digits)}-{fake('slack-b', 13, string.digits)}-"
        f"{fake('slack-c', 24)}"
    )
    add("slack_bot_token", f"SLACK_BOT_TOKEN: {k}", k)
    k = (
        f"https://hooks.slack.com/services/T{fake('hook-a', 8, _UPPER_DIGITS)}/B"
        f"{fake('hook-b', 10, _UPPER_DIGITS)}/{fake('hook-c', 24)}"
    )
    add("slack_webhook", f"post alerts to {k} please", k)
    k = "AIza" + fake("google", 35, _URLSAFE)
    add("google_api_key", f"maps.googleapis.com/maps/api/js?key={k}&callback=init", k)
    k = "sk_live_" + fake("stripe", 24)
    add("stripe_live", f'stripe.api_key = "{k}"', k)
    header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    payload = (
        base64.urlsafe_b64encode(b'{"sub":"1234567890","name":"Ada","iat":1716239022}')
        .decode()
        .rstrip("=")
    )
    k = f"{header}.{payload}.{fake('jwt-sig', 43, _URLSAFE)}"
    add("jwt", f"the cookie session={k}; path=/", k)
    k = fake("bearer", 40, _URLSAFE)
    add("bearer_header", f"curl -H 'Authorization: Bearer {k}' https://api.example.com/v1/me", k)
    k = base64.b64encode(b"deploy:" + fake("basic-pw", 14).encode()).decode()
    add("basic_auth_header", f"Authorization: Basic {k}\nAccept: application/json", k)
    pw = fake("url-pw", 16)
    add("url_password", f"DATABASE_URL=postgres://app_user:{pw}@db.internal:5432/shop", pw)
    pw = "Xk9#vL2!qR" + fake("jdbc-pw", 6)
    add(
        "jdbc_mysql_password",
        f"jdbc:mysql://db.internal:3306/shop?user=app&password={pw}&useSSL=true",
        pw,
    )
    pw = "Wq7$zP3m" + fake("jdbc-ms", 6)
    add(
        "jdbc_sqlserver_password",
        f"jdbc:sqlserver://db:1433;databaseName=crm;user=sa;password={pw};encrypt=true",
        pw,
    )
    pw = "Tr0ub4dor&3" + fake("ini-pw", 4)
    add("ini_password", f"[database]\nhost = db.internal\nuser = app\npassword = {pw}\n", pw)
    pw = "K8s#prod!2024" + fake("env-pw", 4)
    add("dotenv_db_password", f"DB_HOST=db.internal\nDB_USER=app\nDB_PASSWORD={pw}\n", pw)
    pw = "s3cr3t-Yaml-" + fake("yaml-pw", 6)
    add("yaml_password", f'database:\n  user: app\n  password: "{pw}"\n', pw)
    k = fake("azure-storage", 86, _B64) + "=="
    add(
        "azure_storage_key",
        f"DefaultEndpointsProtocol=https;AccountName=acmelogs;AccountKey={k};EndpointSuffix=core.windows.net",
        k,
    )
    k = fake("azure-sb", 43, _B64) + "="
    add(
        "azure_service_bus",
        f"Endpoint=sb://acme-bus.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={k}",
        k,
    )
    block, body = _pem("RSA ", "pem-rsa")
    add(
        "private_key_rsa",
        f"here is the deploy key:\n{block}\nuse it for the bastion",
        block[40:80],
        body[-30:],
    )
    block, body = _pem("OPENSSH ", "pem-ssh")
    add("private_key_openssh", f"cat ~/.ssh/id_ed25519\n{block}\n", block[40:80], body[-30:])
    block, body = _pem("", "pem-gcp", escape=True)
    gcp = (
        '{"type": "service_account", "project_id": "acme-prod", "private_key_id": "'
        + fake("gcp-kid", 40, _HEX)
        + '", "private_key": "'
        + block
        + '\\n", "client_email": "ci@acme-prod.iam.gserviceaccount.com"}'
    )
    add("private_key_json_escaped", gcp, block[40:80], body[-30:])
    k = fake("entropy-quoted", 32)
    add("high_entropy_quoted", f'SIGNING_MATERIAL = "{k}"', k)
    k = fake("entropy-unquoted", 36, _URLSAFE)
    add("high_entropy_unquoted", f"export CI_DEPLOY_SALT={k}", k)
    k = (
        "M"
        + fake("discord-a", 23, _URLSAFE)
        + "."
        + fake("discord-b", 6, _URLSAFE)
        + "."
        + fake("discord-c", 27, _URLSAFE)
    )
    add("discord_bot_token", f"client.run('{k}')", k)
    k = fake("tg-id", 10, string.digits) + ":" + fake("tg-secret", 35, _URLSAFE)
    add("telegram_bot_token", f"https://api.telegram.org/bot{k}/getMe", k)
    k = fake("mailchimp", 32, _HEX) + "-us14"
    add("mailchimp", f"mailchimp key {k} for the newsletter", k)
    k = "sq0csp-" + fake("square", 43, _URLSAFE)
    add("square_oauth_secret", f"SQUARE_OAUTH_SECRET: {k}", k)
    k = "dop_v1_" + fake("digitalocean", 64, _HEX)
    add("digitalocean_pat", f"doctl auth init -t {k}", k)
    k = "shpat_" + fake("shopify", 32, _HEX)
    add("shopify_access_token", f"X-Shopify-Access-Token: {k}", k)
    k = "dapi" + fake("databricks", 32, _HEX)
    add("databricks_token", f"databricks configure --token <<< {k}", k)
    k = base64.b64encode(b"deploy:" + fake("docker-pw", 18).encode()).decode()
    add("docker_config_auth", json.dumps({"auths": {"registry.example.com": {"auth": k}}}), k)
    k = fake("generic-api", 32, _HEX)
    add("generic_api_key", f'api_key = "{k}"', k)
    s.extend(_second_round())
    return s


_BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l".upper()


def _tokens() -> list[tuple[str, str, bool]]:
    """(kind, token, distinctive) for the provider shapes of the second round: DISTINCTIVE
    prefixes are also caught glued after letters (`TOKENghp_...`); short or generic ones
    (`key-`, `AAAA...:`) only after `_` or a non-word character."""
    return [
        ("mailgun_key", "key-" + fake("mailgun", 32, _HEX), False),
        ("square_access_token", "EAAA" + fake("square-at", 60, _URLSAFE), False),
        ("square_oauth_token", "sq0atp-" + fake("square-oauth", 22, _URLSAFE), True),
        ("doppler_token", "dp.pt." + fake("doppler", 43), True),
        ("linear_key", "lin_api_" + fake("linear", 40), True),
        ("notion_secret", "secret_" + fake("notion", 43), False),
        ("notion_token", "ntn_" + fake("ntn-a", 11, string.digits) + fake("ntn-b", 35), True),
        ("age_secret_key", "AGE-SECRET-KEY-1" + fake("age", 58, _BECH32), True),
        (
            "slack_app_token",
            f"xapp-1-A{fake('xapp-a', 10, _UPPER_DIGITS)}-{fake('xapp-b', 13, string.digits)}-"
            f"{fake('xapp-c', 64, _HEX)}",
            True,
        ),
        ("stripe_webhook_secret", "whsec_" + fake("whsec", 32), True),
        ("google_oauth_secret", "GOCSPX-" + fake("gocspx", 28, _URLSAFE), True),
        ("google_oauth_access_token", "ya29." + fake("ya29", 60, _URLSAFE), True),
        ("google_oauth_refresh_token", "1//0" + fake("google-refresh", 96, _URLSAFE), True),
        ("vault_token", "hvs." + fake("vault", 90, _URLSAFE), True),
        (
            "grafana_service_account",
            "glsa_" + fake("glsa", 32) + "_" + fake("glsa-c", 8, _HEX),
            True,
        ),
        ("grafana_cloud_token", "glc_" + fake("glc", 80, _B64) + "==", True),
        ("atlassian_token", "ATATT3xFfGF0" + fake("atlassian", 180, _URLSAFE), True),
        ("postman_key", "PMAK-" + fake("pmak-a", 24, _HEX) + "-" + fake("pmak-b", 34, _HEX), True),
        ("newrelic_key", "NRAK-" + fake("nrak", 27, _UPPER_DIGITS), True),
        (
            "tailscale_key",
            "tskey-auth-k" + fake("ts-a", 11) + "CNTRL-" + fake("ts-b", 32),
            True,
        ),
        ("terraform_token", fake("tf-a", 14) + ".atlasv1." + fake("tf-b", 67, _URLSAFE), True),
        (
            "fcm_server_key",
            "AAAA" + fake("fcm-a", 7, _URLSAFE) + ":APA91b" + fake("fcm-b", 134, _URLSAFE),
            False,
        ),
        ("sentry_token", "sntrys_" + fake("sentry", 120, _B64.replace("/", "")), True),
        ("docker_hub_token", "dckr_pat_" + fake("dckr", 27, _URLSAFE), True),
        ("groq_key", "gsk_" + fake("groq", 52), True),
        ("perplexity_key", "pplx-" + fake("pplx", 48), True),
        ("replicate_token", "r8_" + fake("replicate", 37), False),
        ("supabase_token", "sbp_" + fake("supabase", 40, _HEX), True),
        ("planetscale_password", "pscale_pw_" + fake("pscale", 43, _URLSAFE), True),
        (
            "langsmith_key",
            "lsv2_pt_" + fake("lsv2-a", 32, _HEX) + "_" + fake("lsv2-b", 10, _HEX),
            True,
        ),
        ("heroku_key", "HRKU-" + fake("heroku", 60, _URLSAFE), True),
        ("nvidia_key", "nvapi-" + fake("nvapi", 64, _URLSAFE), True),
        ("figma_token", "figd_" + fake("figma", 40, _URLSAFE), True),
        ("netlify_token", "nfp_" + fake("netlify", 36), True),
        ("pulumi_token", "pul-" + fake("pulumi", 40, _HEX), True),
        (
            "circleci_token",
            "CCIPAT_" + fake("circleci-a", 22) + "_" + fake("circleci-b", 40, _HEX),
            True,
        ),
        ("sourcegraph_token", "sgp_" + fake("sourcegraph", 40, _HEX), True),
        ("bitbucket_app_password", "ATBB" + fake("bitbucket", 32), True),
        ("buildkite_token", "bkua_" + fake("buildkite", 40, _HEX), True),
        ("openrouter_key", "sk-or-v1-" + fake("openrouter", 64, _HEX), True),
        (
            "mapbox_secret_token",
            "sk.eyJ1IjoiYWNtZSIsImEiOiJ"
            + fake("mapbox-a", 30, _URLSAFE)
            + "."
            + fake("mapbox-b", 22, _URLSAFE),
            False,
        ),
        ("dropbox_token", "sl." + fake("dropbox", 135, _URLSAFE), False),
        (
            "azure_client_secret",
            fake("azcs-a", 3) + "8Q~" + fake("azcs-b", 34, _URLSAFE + "~."),
            False,
        ),
        ("github_classic_glued", "ghp_" + fake("github-glued", 36), True),
        ("google_api_key_glued", "AIza" + fake("google-glued", 35, _URLSAFE), True),
        ("openai_key_glued", "sk-proj-" + fake("openai-glued", 48, _URLSAFE), True),
        ("aws_access_key_glued", "AKIA" + fake("aws-glued", 16, _UPPER_DIGITS), True),
        ("slack_token_glued", "xoxb-1234567890-" + fake("slack-glued", 24), True),
        ("huggingface_glued", "hf_" + fake("hf-glued", 34, string.ascii_letters), False),
        ("npm_glued", "npm_" + fake("npm-glued", 36), True),
    ]


def _contexts(kind: str, token: str, distinctive: bool) -> list[SecretSample]:
    """TOKEN in the places an agent writes one: alone, glued after `_` (an environment
    name, Markdown italics), glued after letters, in a URL, JSON, a shell command, prose;
    with zero-width characters inside it, or its first letter a JSON `\\uXXXX` escape."""
    half = len(token) // 2
    texts = {
        "alone": token,
        "italics": f"the key is _{token}_ (do not commit it)",
        "env_glued": f"MY_TOKEN_{token}",
        "underscore": f"x_{token}",
        "url": f"https://api.example.com/v1/hooks?token={token}&team=core",
        "json": json.dumps({"name": "deploy", "credential": token, "enabled": True}),
        "shell": f"$ deploy-tool push --region eu-west-1 {token} && echo done",
        "prose": f"I pasted {token} into the settings page yesterday.",
        "bold": f"**{token}**",
        # copied from a page with a zero-width space in it, or from JSON that escapes a letter
        "zero_width": f"use {token[:2]}\u200b{token[2:half]}\u200d{token[half:]}",
        "json_escape": f'{{"credential": "\\u{ord(token[0]):04x}{token[1:]}"}}',
    }
    if distinctive:
        texts["letters_glued"] = f"TOKEN{token}"
    return [
        SecretSample(f"{kind}/{ctx}", text, (_hidden_form(ctx, text, token),))
        for ctx, text in texts.items()
    ]


def _hidden_form(context: str, text: str, token: str) -> str:
    """What of TEXT must not survive: TOKEN as it is written there (with its zero-width
    characters, or from its escape on)."""
    if context == "zero_width":
        return text.removeprefix("use ")
    if context == "json_escape":
        return text[text.index("\\u") : text.index(token[1:]) + len(token) - 1]
    return token


def _second_round() -> list[SecretSample]:
    s: list[SecretSample] = []
    for kind, token, distinctive in _tokens():
        s.extend(_contexts(kind, token, distinctive))

    def add(kind: str, text: str, *secrets: str) -> None:
        s.append(SecretSample(kind, text, tuple(secrets)))

    key_pem, key_body = _pem("EC ", "kube-key")
    kube = base64.b64encode(key_pem.encode()).decode()
    add(
        "kubeconfig_client_key",
        "users:\n- name: admin\n  user:\n    client-certificate-data: LS0tLS1CRUdJTiBDRVJU\n"
        f"    client-key-data: {kube}\n",
        kube[40:100],
    )
    akid = "AKIA" + fake("aws-csv-id", 16, _UPPER_DIGITS)
    sak = fake("aws-csv-secret", 40, _B64)
    add(
        "aws_console_csv",
        "User name,Password,Access key ID,Secret access key,Console login link\n"
        f"ci-bot,,{akid},{sak},https://123456789012.signin.aws.amazon.com/console\n",
        akid,
        sak,
    )
    add(
        "aws_console_csv_short",
        f"Access key ID,Secret access key\n{akid},{sak}\n",
        akid,
        sak,
    )
    pw = "R3d1s-" + fake("redis-pw", 12)
    add("redis_url_no_user", f"REDIS_URL=redis://:{pw}@cache.internal:6379/0", pw)
    add("redis_url_prose", f"connect with redis://:{pw}@10.0.0.7:6379 from the worker", pw)
    pw = "Ssh!" + fake("sshpass", 10)
    add("sshpass", f"sshpass -p '{pw}' ssh deploy@bastion.internal uptime", pw)
    add("sshpass_bare", f"sshpass -p {pw} scp build.tar.gz deploy@host:/srv", pw)
    pw = "My5ql" + fake("mysql-pw", 10)
    add("mysql_p_glued", f"mysql -u root -p{pw} -h db.internal shop < dump.sql", pw)
    add("mysql_p_quoted", f"mysqldump -uroot -p'{pw}' shop > shop.sql", pw)
    pw = "Curl" + fake("curl-pw", 12)
    add("curl_user", f"curl -u admin:{pw} https://jenkins.internal/api/json", pw)
    add("curl_user_quoted", f'curl --user "ci:{pw}" -X POST https://ci.internal/job/build', pw)
    pw = "Cli" + fake("cli-pw", 14)
    add("cli_password_flag", f"pg_restore --username app --password {pw} --dbname shop", pw)
    add("cli_password_equals", f"./manage.py createsuperuser --password={pw}", pw)
    add("cli_token_flag", f"vault login --token {pw} && vault kv get secret/app", pw)
    ppk_private = fake("ppk-priv", 64, _B64) + "\n" + fake("ppk-priv2", 44, _B64)
    add(
        "putty_private_key",
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy@ci\n"
        f"Public-Lines: 2\n{fake('ppk-pub', 64, _B64)}\n{fake('ppk-pub2', 24, _B64)}\n"
        f"Private-Lines: 2\n{ppk_private}\nPrivate-MAC: {fake('ppk-mac', 64, _HEX)}\n",
        ppk_private.split("\n")[0],
        ppk_private.split("\n")[1],
    )
    pw = "Nrc" + fake("netrc", 12)
    add("netrc_one_line", f"machine api.example.com login deploy password {pw}", pw)
    add("netrc_lines", f"machine github.com\n  login ana\n  password {pw}\n", pw)
    pw = "Dkr" + fake("docker-login", 16)
    add("docker_login_password", f"docker login -u ana -p {pw} registry.example.com", pw)
    hook = fake("discord-hook", 68, _URLSAFE)
    add(
        "discord_webhook",
        f"curl -X POST https://discord.com/api/webhooks/123456789012345678/{hook} -d @msg.json",
        hook,
    )
    hook = (
        f"{fake('teams-a', 36, _HEX)}@{fake('teams-b', 36, _HEX)}/IncomingWebhook/"
        f"{fake('teams-c', 32, _HEX)}"
    )
    add("teams_webhook", f"TEAMS_URL=https://acme.webhook.office.com/webhookb2/{hook}", hook)
    add("prose_password", "my password is hunter2-Xq9! so please reset it", "hunter2-Xq9")
    add(
        "prose_password_colon",
        "The wifi password: Tr0ub4dor&3xyz (the guest one is on the fridge)",
        "Tr0ub4dor&3xyz",
    )
    add(
        "prose_passphrase",
        "the passphrase for the backup key is `correct-Horse-7-battery`.",
        "correct-Horse-7-battery",
    )
    add("prose_pw_was", "root pw was Zq8!mN2#vL4 before the rotation", "Zq8!mN2#vL4")
    # a key named with a hyphen (YAML, an HTTP header) whose value is base64 of a token:
    # the keyword rule knew `api_key` and `apikey`, and a base64 of text was data
    token = fake("hyphen-api-key", 24)
    encoded = base64.b64encode(token.encode()).decode()
    add("hyphenated_key_base64", f"  api-key: {encoded}\n  X-Api-Key: {encoded}\n", encoded)
    # a Kubernetes Secret's data and a variable holding an encoded credential: each value
    # base64 of what would be redacted in clear
    pw = "Kube" + fake("k8s-db-pw", 14)
    url = base64.b64encode(f"postgres://app:{pw}@db.internal:5432/shop".encode()).decode()
    add(
        "kubernetes_secret_data",
        f"apiVersion: v1\nkind: Secret\ntype: Opaque\ndata:\n  DATABASE_URL: {url}\n",
        url,
    )
    env = base64.b64encode(
        f"AWS_SECRET_ACCESS_KEY={fake('b64-env-aws', 40, _B64)}\n".encode()
    ).decode()
    add("base64_env_file", f"ENV_FILE_B64={env}", env)
    okta = "00" + fake("okta", 40, _URLSAFE)
    add(
        "okta_token",
        f"curl -H 'Authorization: SSWS {okta}' https://acme.okta.com/api/v1/users",
        okta,
    )
    add("okta_token_json", json.dumps({"headers": {"Authorization": f"SSWS {okta}"}}), okta)
    return s


CORPUS: tuple[SecretSample, ...] = tuple(_samples())

_PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5Erk"
    "Jggg=="
)
_B64_JSON = base64.b64encode(
    json.dumps({"user": "alice", "role": "admin", "team": "platform", "since": 2021}).encode()
).decode()
_B64_HOST = base64.b64encode(b"https://api.internal.example.com:8443/v2").decode()

LOOKALIKES: tuple[tuple[str, str], ...] = (
    ("git_sha", "commit 3f40072cb27e5c7f9a8b7c6d5e4f3a2b1c0d9e8f fixed the rollback"),
    (
        "git_sha_json",
        '{"sha": "3f40072cb27e5c7f9a8b7c6d5e4f3a2b1c0d9e8f", "parent": '
        '"9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d"}',
    ),
    ("uuid", "request id 123e4567-e89b-12d3-a456-426614174000 failed"),
    (
        "uuid_json",
        '{"id": "9b2c4f1e-7a3d-4e8b-9c6f-1d2e3f4a5b6c", "session_id": '
        '"f47ac10b-58cc-4372-a567-0e02b2c3d479"}',
    ),
    ("base64_image_markdown", f"![chart](data:image/png;base64,{_PNG})"),
    ("base64_image_json", json.dumps({"image": _PNG, "mime": "image/png"})),
    ("base64_json", json.dumps({"payload": _B64_JSON})),
    # base64 of text that holds no secret stays, whatever its key
    ("base64_config_yaml", f"data:\n  config.json: {_B64_JSON}\n  api-host: {_B64_HOST}\n"),
    (
        "json_blob",
        '{"model": "gpt-4o-mini", "tokens_in": 1234, "max_tokens": 4096, "temperature": 0.2, '
        '"cache_key": "summary-v2"}',
    ),
    ("sk_learn", "we train it with sk-learn and the sk-learn-style API; see sklearn.linear_model"),
    ("git_ssh_url", "git clone git@github.com:acme/payments-service.git && cd payments-service"),
    ("ssh_url", "git remote add origin ssh://git@gitlab.example.com:2222/acme/infra.git"),
    (
        "sha256_digest",
        "image@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 pulled",
    ),
    (
        "npm_integrity",
        '"integrity": '
        '"sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUR+YXiHaTXxS9S0Ow=="',
    ),
    (
        "pem_prose",
        "Your file must start with -----BEGIN PRIVATE KEY----- and nothing else.\n"
        "Paste it into the vault, never into this chat. Thanks for checking first!",
    ),
    (
        "pem_prose_multiline",
        "The header line reads\n-----BEGIN RSA PRIVATE KEY-----\nand the footer is the same with "
        "END.\n"
        "Everything between them is the base64 body; do not share it.",
    ),
    ("xoxo_hugs", "xoxo-hugs-and-kisses from the whole team"),
    (
        "sk_cluster_name",
        "deploy to sk-prod-eu-west-1-cluster-a1 tonight, then sk-prod-eu-west-1-cluster-b2",
    ),
    ("bearer_prose", "I am the bearer 2FA-recovery-codes-are-in-the-vault note for Ana"),
    ("bearer_of_news", "sorry to be the bearer of bad news"),
    ("mailto_url", "write to mailto://john:doe@example.com for access"),
    ("akia_prose", "AKIA is the prefix of a long-term key, AKIAshort is not a key"),
    (
        "password_prose",
        "Remember to change your password every 90 days; the secret is a good passphrase.",
    ),
    (
        "python_signature",
        "def login(user: str, password: str) -> bool:\n    return check(user, password)",
    ),
    ("indirect_password", 'password = os.environ["DB_PASSWORD"]\napi_key = get_api_key()'),
    (
        "templated_password",
        "DB_PASSWORD=${DB_PASSWORD}\npassword: <your-password>\napi_key: {{ vault_api_key }}",
    ),
    ("token_counts", "tokens_in: 1234, tokens_out: 56, max_tokens: 4096"),
    ("key_prose", "primary_key: id\nsort_key: created_at\nthe key: point is speed"),
    ("url_query", "see https://example.com/docs?page=2&sort=desc#install"),
    (
        "ssh_public_key",
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl "
        "ana@laptop",
    ),
    ("long_word", "internationalization and counterrevolutionaries are long words"),
    ("redacted_marker", "api_key = [redacted:openai_key] and password=[redacted:password]"),
    ("version_strings", "python 3.11.9, node v20.11.1, build 2024.03.01-rc2"),
    (
        "python_config_code",
        'token_budget = data.get("max_tokens", 4096)\n'
        'api_key = os.environ.get("OPENAI_API_KEY")\n'
        "return Config(token_budget=token_budget, api_key=api_key, **data)",
    ),
    (
        "password_prose_words",
        "my password is long enough, the password is required, and the passphrase was "
        "forgotten; pw is short for password.",
    ),
    ("password_prose_placeholder", "the password is <your password> and the pw: ${DB_PW}"),
    (
        "shell_password_variables",
        'docker login --password-stdin < pw.txt\nsshpass -p "$SSH_PASS" ssh host\n'
        'curl -u "$USER:$TOKEN" https://ci.internal\nmysql -u root -p shop\n'
        "pg_dump --password --dbname shop\nvault login --token=$VAULT_TOKEN",
    ),
    (
        "prefix_prose",
        "Vault tokens start with hvs., Grafana ones with glsa_, Linear keys with lin_api_, "
        "Notion secrets with secret_ and age keys with AGE-SECRET-KEY-1; a monkey-wrench.",
    ),
    ("kubeconfig_cert_only", "    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t"),
    ("redis_url_no_password", "REDIS_URL=redis://cache.internal:6379/0 and redis://:@localhost"),
    ("snake_case_identifiers", "the_secret_sauce_recipe and MY_TOKEN_NAME and x_axis_label"),
    (
        "hashed_cache_keys",
        "s3://builds/cache-key-9f86d081884c7d659a2feaa0c55ad015 and "
        "s3://builds/key-0cc175b9c0f1b6a831c399e269772661.tar",
    ),
    (
        "password_rules_prose",
        "the password was changed on 2024-03-01; the password is stored in the vault and "
        "the passphrase should be four random words",
    ),
    (
        "netrc_prose",
        "the login page asks for your password twice; machine learning needs no password reset",
    ),
    ("docker_login_stdin", "echo $PW | docker login -u ana --password-stdin registry.example.com"),
    ("mapbox_public_token", "pk.eyJ1IjoiYWNtZSIsImEiOiJja2V4YW1wbGUifQ.Zm9vYmFyYmF6 on the map"),
    (
        "cli_flags_without_values",
        "pass --api-key with your key, or use --token-file ~/.token and --secret-name db",
    ),
    # from public coding sessions (bench/coding-b): names in code, a model hub's ids, a Metal
    # error code, a setting with its comment
    (
        "camel_case_names",
        "non_functional: NonFunctionalRequirements = Field(default_factory=Requirements)\n"
        "  onProcessMarkdown: addLanguageToCodeBlocks,\n"
        "visitPageHelpers.ts: createRemoveNodesFunction executing\n"
        "- Title: BrowserAutomationStudio",
    ),
    (
        "model_hub_ids",
        "Discovered new model: SpongeEngine/Mistral-Small-24B-Instruct-2501-write\n"
        "smollm3-3b-128k: unsloth/SmolLM3-3B-128K-GGUF/SmolLM3-3B-128K-UD-IQ2_XXS\n"
        "nazareai-senior-marketing-strategist: seedgularity/NazareAI-Senior-Marketing-Strategist",
    ),
    (
        "metal_error_code",
        "Compute error (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory), Metal error",
    ),
    ("setting_with_comment", "SAFE_UNLIMITED_TOKENS = 4096         # Works on 3-4 B Llama-3"),
    (
        "setting_quoted_in_prose",
        "GoldenTestUsageWarning: Add 'enabl\ne_assertion_pass_hook=true' to pytest.ini for safer "
        "usage of pytest-golden.",
    ),
)
