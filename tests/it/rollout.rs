//! Rollouts that roll back by themselves (`infra/template.json`, infra/README.md "Rollouts").
//!
//! - every serving function publishes a version behind a `live` alias, and its Function URL and
//!   URL permissions point at that alias, never at `$LATEST`;
//! - CodeDeploy shifts traffic to a new version gradually (the `DeploymentType` parameter, a
//!   canary by default), watching alarms on the alias as rollback triggers: errors for every
//!   function, and p99 latency and logged errors for the MCP function;
//! - the MCP function's pre-traffic hook (`infra/hooks/pre_traffic.py`) may invoke only the new
//!   version and report only to its own deployment group; the hook's checks pass on the release
//!   binary and fail when they should (`lambda_runtime::the_pre_traffic_hook_passes_a_good_version`),
//!   and its reporting is unit-tested with stand-ins for boto3 (`tests/infra/test_pre_traffic.py`).

use std::process::Command;

use serde_json::{Value, json};

use crate::support::template::{
    as_list, function_with_binary, get_att, hook_functions, is_ref_to, of_type, resources, role_of,
    root, statements, template, workload_functions,
};

const ALIAS: &str = "live";

/// The alarms a function's `DeploymentPreference` rolls back on.
fn rollback_alarms<'a>(t: &'a Value, function: &str) -> Vec<(&'a str, &'a Value)> {
    as_list(&resources(t)[function]["Properties"]["DeploymentPreference"]["Alarms"])
        .into_iter()
        .map(|a| {
            let id = a["Ref"]
                .as_str()
                .unwrap_or_else(|| panic!("{function}: rollback alarm {a} must Ref an alarm"));
            let alarm = &resources(t)[id];
            assert_eq!(alarm["Type"], "AWS::CloudWatch::Alarm", "{function}: {id}");
            (id, &alarm["Properties"])
        })
        .collect()
}

/// Whether an alarm watches `metric` of `function`'s live alias (not of every version).
fn watches_alias(alarm: &Value, function: &str, metric: &str) -> bool {
    let dims = as_list(&alarm["Dimensions"]);
    let on_function = dims
        .iter()
        .any(|d| d["Name"] == "FunctionName" && is_ref_to(&d["Value"], function));
    let on_alias = dims.iter().any(|d| {
        d["Name"] == "Resource"
            && d["Value"]["Fn::Sub"].as_str() == Some(&format!("${{{function}}}:{ALIAS}"))
    });
    alarm["Namespace"] == "AWS/Lambda" && alarm["MetricName"] == metric && on_function && on_alias
}

#[test]
fn every_serving_function_publishes_behind_a_live_alias_and_shifts_gradually() {
    let t = template();
    let default_type = &t["Parameters"]["DeploymentType"]["Default"];
    assert!(
        default_type
            .as_str()
            .is_some_and(|d| d.starts_with("Canary")),
        "the default rollout is a canary, is {default_type}"
    );
    for (id, f) in workload_functions(&t) {
        let p = &f["Properties"];
        assert_eq!(p["AutoPublishAlias"], ALIAS, "{id}: AutoPublishAlias");
        let preference = &p["DeploymentPreference"];
        assert!(
            is_ref_to(&preference["Type"], "DeploymentType"),
            "{id}: DeploymentPreference.Type must follow the DeploymentType parameter"
        );
        assert!(
            preference.get("Enabled").is_none_or(|e| e == true),
            "{id}: deployments must go through CodeDeploy"
        );
        let alarms = rollback_alarms(&t, id);
        assert!(
            alarms.iter().any(|(_, a)| watches_alias(a, id, "Errors")),
            "{id}: no rollback alarm on the errors of its {ALIAS} alias"
        );
    }
}

#[test]
fn the_mcp_function_rolls_back_on_latency_and_logged_errors_too() {
    let t = template();
    let mcp = function_with_binary(&t, "mcp-lambda");
    let alarms = rollback_alarms(&t, mcp);
    let latency = alarms
        .iter()
        .find(|(_, a)| watches_alias(a, mcp, "Duration"))
        .unwrap_or_else(|| panic!("{mcp}: no rollback alarm on its alias's duration"));
    assert_eq!(latency.1["ExtendedStatistic"], "p99", "{}", latency.0);
    assert!(
        is_ref_to(&latency.1["Threshold"], "LatencyAlarmMillis"),
        "{}: threshold",
        latency.0
    );
    assert!(
        alarms
            .iter()
            .any(|(_, a)| a["MetricName"] == "McpErrorLogLines"),
        "{mcp}: the ERROR-line alarm is a rollback trigger"
    );
    for (id, a) in &alarms {
        assert!(
            a["Period"].as_u64().is_some_and(|p| p <= 60),
            "{id}: a rollback alarm must see a canary's minutes (period <= 60 s)"
        );
    }
}

#[test]
fn function_urls_and_their_permissions_point_at_the_alias() {
    let t = template();
    let urls = of_type(&t, "AWS::Lambda::Url");
    assert_eq!(urls.len(), 2, "the MCP endpoint and the pages");
    for (id, u) in urls {
        let (function, _) = get_att(&u["Properties"]["TargetFunctionArn"])
            .unwrap_or_else(|| panic!("{id}: TargetFunctionArn must GetAtt a function"));
        assert_eq!(u["Properties"]["Qualifier"], ALIAS, "{id}: Qualifier");
        let alias = format!("{function}Alias{ALIAS}");
        assert!(
            as_list(&u["DependsOn"]).contains(&&json!(alias)),
            "{id}: DependsOn {alias} (the alias SAM makes)"
        );
    }
    for (id, p) in of_type(&t, "AWS::Lambda::Permission") {
        let name = &p["Properties"]["FunctionName"];
        let Some(target) = name["Ref"].as_str() else {
            continue;
        };
        let is_url_permission = p["Properties"].get("FunctionUrlAuthType").is_some()
            || p["Properties"].get("InvokedViaFunctionUrl").is_some();
        if is_url_permission {
            assert!(
                target.ends_with(&format!("Alias{ALIAS}")),
                "{id}: a Function URL permission on {target}, not on the alias"
            );
        }
    }
}

#[test]
fn the_pre_traffic_hook_invokes_only_the_new_version_and_reports_to_its_deployment() {
    let t = template();
    let mcp = function_with_binary(&t, "mcp-lambda");
    let hook =
        resources(&t)[mcp]["Properties"]["DeploymentPreference"]["Hooks"]["PreTraffic"]["Ref"]
            .as_str()
            .unwrap_or_else(|| panic!("{mcp}: no PreTraffic hook"));
    assert_eq!(
        hook_functions(&t).into_iter().collect::<Vec<_>>(),
        vec![hook.to_owned()]
    );
    let p = &resources(&t)[hook]["Properties"];
    // SAM's CodeDeploy role (AWSCodeDeployRoleForLambda) may invoke only CodeDeployHook_*.
    assert!(
        p["FunctionName"]["Fn::Sub"]
            .as_str()
            .is_some_and(|n| n.starts_with("CodeDeployHook_")),
        "{hook}: FunctionName must start with CodeDeployHook_"
    );
    assert!(
        p.get("AutoPublishAlias").is_none() && p.get("DeploymentPreference").is_none(),
        "{hook}: a hook is not itself rolled out"
    );
    let version = format!("{mcp}.Version");
    assert!(
        is_ref_to(&p["Environment"]["Variables"]["TARGET_VERSION"], &version),
        "{hook}: TARGET_VERSION must be Ref {version}"
    );
    let (module, function) = p["Handler"]
        .as_str()
        .and_then(|h| h.split_once('.'))
        .expect("Handler module.function");
    let code = root()
        .join("infra")
        .join(p["CodeUri"].as_str().expect("CodeUri"))
        .join(format!("{module}.py"));
    let source = std::fs::read_to_string(&code)
        .unwrap_or_else(|e| panic!("{hook}: {}: {e}", code.display()));
    assert!(source.contains(&format!("\ndef {function}(")), "{hook}");

    let (role, r) = role_of(&t, hook);
    let granted: Vec<(String, &Value)> = statements(r)
        .into_iter()
        .flat_map(|s| {
            as_list(&s["Action"])
                .into_iter()
                .map(move |a| (a.as_str().unwrap_or_default().to_owned(), &s["Resource"]))
        })
        .collect();
    for (action, resource) in &granted {
        match action.as_str() {
            "lambda:InvokeFunction" => assert!(
                is_ref_to(resource, &version),
                "{role}: may invoke {resource}; only the new version ({version})"
            ),
            "codedeploy:PutLifecycleEventHookExecutionStatus" => assert!(
                resource["Fn::Sub"].as_str().is_some_and(|s| s.ends_with(&format!(
                    ":deploymentgroup:${{ServerlessDeploymentApplication}}/${{{mcp}DeploymentGroup}}"
                ))),
                "{role}: reports to {resource}, not to {mcp}'s deployment group"
            ),
            "secretsmanager:GetSecretValue" => assert!(
                is_ref_to(resource, "CanaryTokenSecret"),
                "{role}: reads the secret {resource}"
            ),
            "logs:CreateLogStream" | "logs:PutLogEvents" => {}
            other => panic!("{role}: grants {other}, which the hook does not need"),
        }
    }
    for needed in [
        "lambda:InvokeFunction",
        "codedeploy:PutLifecycleEventHookExecutionStatus",
        "secretsmanager:GetSecretValue",
    ] {
        assert!(
            granted.iter().any(|(a, _)| a == needed),
            "{role}: lacks {needed}"
        );
    }
}

/// The hook's reporting (Succeeded, Failed, an invocation error, a crash) with stand-ins for
/// boto3's clients, in Python's own unittest.
#[test]
fn the_pre_traffic_hook_reports_what_it_found() {
    let output = Command::new("python3")
        .args(["-m", "unittest", "-v", "tests/infra/test_pre_traffic.py"])
        .current_dir(root())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3 runs (the hook is Python)");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("OK"), "{stderr}");
}
