"""The pre-traffic hook (infra/hooks/pre_traffic.py) with stand-ins for boto3's clients.

Run from the workspace root: `python3 -m unittest tests/infra/test_pre_traffic.py` (the Rust
test `rollout::the_pre_traffic_hook_reports_what_it_found` does). Whether the hook's requests
pass on the real function is proven against the release binary in tests/it/lambda_runtime.rs.
"""

import io
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "infra", "hooks"))
import pre_traffic  # noqa: E402

VERSION = "arn:aws:lambda:eu-west-1:123456789012:function:gatehouse-mcp:7"
EVENT = {"DeploymentId": "d-ABC", "LifecycleEventHookExecutionId": "hook-1"}


def healthy(event):
    """What a good version answers to each of the hook's events."""
    if "authorization" not in event["headers"]:
        return {"statusCode": 401, "headers": {"WWW-Authenticate": "Bearer"}, "body": "{}"}
    request = json.loads(event["body"])
    if request["method"] == "tools/list":
        result = {"tools": [{"name": "get_server_status"}]}
    else:
        result = {"content": [], "isError": False}
    body = {"jsonrpc": "2.0", "id": request["id"], "result": result}
    return {"statusCode": 200, "headers": {}, "body": json.dumps(body)}


class Lambda:
    def __init__(self, answer, function_error=None):
        self.answer, self.function_error, self.invoked = answer, function_error, []

    def invoke(self, FunctionName, Payload):
        self.invoked.append(FunctionName)
        event = json.loads(Payload)
        out = {"Payload": io.BytesIO(json.dumps(self.answer(event)).encode())}
        if self.function_error:
            out["FunctionError"] = self.function_error
        return out


class CodeDeploy:
    def __init__(self):
        self.reports = []

    def put_lifecycle_event_hook_execution_status(self, **kwargs):
        self.reports.append(kwargs)


class Secrets:
    def __init__(self, value):
        self.value = value

    def get_secret_value(self, SecretId):
        if isinstance(self.value, Exception):
            raise self.value
        return {"SecretString": self.value}


class HookTest(unittest.TestCase):
    def setUp(self):
        os.environ["TARGET_VERSION"] = VERSION
        os.environ["CANARY_TOKEN_SECRET_ARN"] = "arn:aws:secretsmanager:eu-west-1:1:secret:canary"

    def run_hook(self, lam, secret="gh_canarytoken"):
        deploy = CodeDeploy()
        clients = {"lambda": lam, "codedeploy": deploy, "secretsmanager": Secrets(secret)}
        status = pre_traffic.handler(EVENT, None, clients)
        self.assertEqual(len(deploy.reports), 1, "reports exactly once")
        report = deploy.reports[0]
        self.assertEqual(report["deploymentId"], "d-ABC")
        self.assertEqual(report["lifecycleEventHookExecutionId"], "hook-1")
        self.assertEqual(report["status"], status)
        return status

    def test_a_healthy_version_succeeds_after_all_three_checks(self):
        lam = Lambda(healthy)
        self.assertEqual(self.run_hook(lam), "Succeeded")
        self.assertEqual(lam.invoked, [VERSION] * 3, "only the new version is invoked")

    def test_without_a_canary_token_only_the_stranger_check_runs(self):
        lam = Lambda(healthy)
        self.assertEqual(self.run_hook(lam, "not set: store a canary token"), "Succeeded")
        self.assertEqual(len(lam.invoked), 1)

    def test_a_version_that_lets_strangers_in_fails(self):
        def open_door(event):
            answer = healthy(dict(event, headers=dict(event["headers"], authorization="x")))
            return answer

        self.assertEqual(self.run_hook(Lambda(open_door)), "Failed")

    def test_a_tool_error_fails(self):
        def broken_read(event):
            answer = healthy(event)
            if answer["statusCode"] == 200 and '"isError": false' in answer["body"]:
                answer["body"] = answer["body"].replace('"isError": false', '"isError": true')
            return answer

        self.assertEqual(self.run_hook(Lambda(broken_read)), "Failed")

    def test_a_missing_tool_fails(self):
        def no_tools(event):
            answer = healthy(event)
            answer["body"] = answer["body"].replace("get_server_status", "something_else")
            return answer

        self.assertEqual(self.run_hook(Lambda(no_tools)), "Failed")

    def test_a_crashing_version_fails(self):
        self.assertEqual(self.run_hook(Lambda(healthy, "Unhandled")), "Failed")

    def test_an_unreadable_secret_still_reports_failed(self):
        self.assertEqual(self.run_hook(Lambda(healthy), RuntimeError("AccessDenied")), "Failed")

    def test_base64_bodies_are_read(self):
        def encoded(event):
            import base64

            answer = healthy(event)
            answer["body"] = base64.b64encode(answer["body"].encode()).decode()
            answer["isBase64Encoded"] = True
            return answer

        self.assertEqual(self.run_hook(Lambda(encoded)), "Succeeded")


if __name__ == "__main__":
    unittest.main()
