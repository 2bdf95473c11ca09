"""CodeDeploy's pre-traffic hook for the MCP function (infra/template.json, McpPreTrafficHook).

Before CodeDeploy shifts any traffic to a new version of the MCP function, it runs this hook.
The hook invokes that version directly, with the Function URL events an MCP client would cause,
and reports Succeeded only when every answer is what a healthy gatehouse answers:

1. `tools/list` without a credential: 401 with a `WWW-Authenticate` challenge (the function
   started, read its configuration and still refuses strangers);
2. with the canary connection's token (CANARY_TOKEN_SECRET_ARN, see infra/README.md):
   `tools/list` lists `get_server_status`, and `tools/call get_server_status` (a read that
   reaches the store through every gate) answers without `isError`.

Until an operator puts a canary token into the secret, only step 1 runs, and the hook says so
in its log. Anything else (an error, a timeout, a wrong answer) reports Failed, and CodeDeploy
keeps all traffic on the old version.

`smoke_calls` and `judge` are pure, so the project's tests feed the very same events to the
release `mcp-lambda` binary (tests/it/rollout.rs) and run the hook against stand-ins for
boto3 (tests/infra/test_pre_traffic.py).
"""

import base64
import json
import os

PROTOCOL_VERSION = "2026-07-28"
# The secret's value until an operator stores a canary connection token in it.
NOT_SET_PREFIX = "not set"
READ_TOOL = "get_server_status"


def _event(body, method, token=None, tool=None):
    """A Lambda Function URL event (payload format 2.0) posting `body` to /mcp."""
    text = json.dumps(body, separators=(",", ":"))
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "host": "pre-traffic-hook.lambda-url.local",
        "mcp-method": method,
        "mcp-protocol-version": PROTOCOL_VERSION,
        "user-agent": "gatehouse-pre-traffic-hook",
        "x-forwarded-proto": "https",
    }
    if tool is not None:
        headers["mcp-name"] = tool
    if token is not None:
        headers["authorization"] = "Bearer " + token
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": "/mcp",
        "rawQueryString": "",
        "headers": headers,
        "requestContext": {
            "accountId": "anonymous",
            "apiId": "pre-traffic-hook",
            "domainName": "pre-traffic-hook.lambda-url.local",
            "http": {
                "method": "POST",
                "path": "/mcp",
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": "gatehouse-pre-traffic-hook",
            },
            "requestId": "pre-traffic-hook",
            "routeKey": "$default",
            "stage": "$default",
            "timeEpoch": 0,
        },
        "body": text,
        "isBase64Encoded": False,
    }


def _request(request_id, method, params):
    meta = {
        "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": dict(params, _meta=meta)}


def smoke_calls(token):
    """The checks to run, as (label, event) pairs; `token` may be None (not set yet)."""
    calls = [("tools/list without a credential", _event(_request("hook-1", "tools/list", {}), "tools/list"))]
    if token is None:
        return calls
    calls.append(("tools/list", _event(_request("hook-2", "tools/list", {}), "tools/list", token)))
    call = _request("hook-3", "tools/call", {"name": READ_TOOL, "arguments": {}})
    calls.append(("tools/call " + READ_TOOL, _event(call, "tools/call", token, READ_TOOL)))
    return calls


def _body(payload):
    text = payload.get("body") or ""
    if payload.get("isBase64Encoded"):
        text = base64.b64decode(text).decode("utf-8")
    return json.loads(text) if text else None


def judge(label, payload):
    """None when `payload` (the function's answer to the check `label`) is healthy, else why not."""
    if not isinstance(payload, dict) or "statusCode" not in payload:
        return label + ": not an HTTP answer: " + repr(payload)[:300]
    status = payload["statusCode"]
    headers = {k.lower(): v for k, v in (payload.get("headers") or {}).items()}
    try:
        body = _body(payload)
    except (ValueError, UnicodeDecodeError) as e:
        return label + ": the body is not JSON (" + str(e) + ")"
    if label == "tools/list without a credential":
        if status != 401 or "www-authenticate" not in headers:
            return label + ": expected 401 with WWW-Authenticate, got " + str(status)
        return None
    if status != 200 or not isinstance(body, dict) or "result" not in body:
        return label + ": expected 200 with a result, got " + str(status) + " " + json.dumps(body)[:300]
    result = body["result"]
    if label == "tools/list":
        names = [t.get("name") for t in result.get("tools", [])]
        if READ_TOOL not in names:
            return label + ": " + READ_TOOL + " is not listed (" + str(len(names)) + " tools)"
        return None
    if result.get("isError"):
        return label + ": the tool answered an error: " + json.dumps(result)[:300]
    return None


def canary_token(secrets, secret_arn):
    """The canary connection's token, or None while the secret still says it is not set."""
    value = secrets.get_secret_value(SecretId=secret_arn)["SecretString"].strip()
    return None if value.startswith(NOT_SET_PREFIX) else value


def run_checks(invoke, token):
    """Runs every check through `invoke(event) -> payload`; returns the failures."""
    failures = []
    for label, event in smoke_calls(token):
        try:
            payload = invoke(event)
        except Exception as e:  # noqa: BLE001 - any failure to invoke fails the deployment
            failures.append(label + ": invoking the new version failed: " + str(e))
            continue
        reason = judge(label, payload)
        if reason is not None:
            failures.append(reason)
    return failures


def handler(event, context, clients=None):
    """The hook's entry point; `clients` lets the tests pass stand-ins for boto3's clients."""
    if clients is None:
        import boto3  # only on Lambda: the tests pass stand-ins

        clients = {name: boto3.client(name) for name in ("lambda", "codedeploy", "secretsmanager")}
    version = os.environ["TARGET_VERSION"]
    status = "Failed"
    try:
        token = canary_token(clients["secretsmanager"], os.environ["CANARY_TOKEN_SECRET_ARN"])
        if token is None:
            print("canary token not set: only the unauthenticated check runs (infra/README.md)")

        def invoke(ev):
            answer = clients["lambda"].invoke(FunctionName=version, Payload=json.dumps(ev).encode())
            if answer.get("FunctionError"):
                raise RuntimeError(answer["FunctionError"] + ": " + answer["Payload"].read().decode()[:300])
            return json.loads(answer["Payload"].read())

        failures = run_checks(invoke, token)
        for failure in failures:
            print("pre-traffic check failed: " + failure)
        status = "Succeeded" if not failures else "Failed"
    except Exception as e:  # noqa: BLE001 - report Failed rather than leave CodeDeploy waiting
        print("pre-traffic hook failed: " + str(e))
    finally:
        clients["codedeploy"].put_lifecycle_event_hook_execution_status(
            deploymentId=event["DeploymentId"],
            lifecycleEventHookExecutionId=event["LifecycleEventHookExecutionId"],
            status=status,
        )
    print("pre-traffic hook for " + version + ": " + status)
    return status
