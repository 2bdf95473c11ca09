//! The deployment template (`infra/template.json`, AWS SAM) checked against the code.
//!
//! - the one table agrees with `store_dynamodb::schema` (keys, types, TTL, billing mode) and is
//!   protected (point-in-time recovery, deletion protection, encryption, retained);
//! - every `Ref`, `Fn::GetAtt`, `Fn::Sub` variable, `DependsOn` and condition name resolves to
//!   a parameter, resource, condition or pseudo-parameter, and every `GetAtt` names an
//!   attribute its resource type has;
//! - the MCP function's role grants exactly the DynamoDB actions `store-dynamodb` calls, on the
//!   table only, and no IAM statement has a wildcard action or resource;
//! - functions are built from this workspace for arm64, log to a group with retention, carry no
//!   secret in their environment, and are watched by alarms; every checkov skip says why.
//!
//! cfn-lint and checkov run on the same template in `tests/infra-checks.sh`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};
use store_dynamodb::schema;

use crate::support::template::{
    as_list, function_with_binary, get_att, is_ref_to, of_type, one_of_type, resources, role_of,
    root, statements, template, workload_functions,
};

/// The phrase the MCP function logs on each request refused because the kill switch is on;
/// the kill-switch metric filter counts these lines.
const KILL_SWITCH_LOG_PHRASE: &str = "kill switch is on";

/// Functions the template declares before their crate exists (see infra/README.md).
const NOT_YET_WRITTEN: &[&str] = &[];

const PSEUDO_PARAMETERS: &[&str] = &[
    "AWS::AccountId",
    "AWS::NotificationARNs",
    "AWS::NoValue",
    "AWS::Partition",
    "AWS::Region",
    "AWS::StackId",
    "AWS::StackName",
    "AWS::URLSuffix",
];

// ---- the table --------------------------------------------------------------------------

#[test]
fn the_table_agrees_with_the_store_schema() {
    let t = template();
    let (id, table) = one_of_type(&t, "AWS::DynamoDB::Table");
    let p = &table["Properties"];

    let keys: BTreeMap<&str, &str> = p["KeySchema"]
        .as_array()
        .expect("KeySchema")
        .iter()
        .map(|k| {
            (
                k["KeyType"].as_str().expect("KeyType"),
                k["AttributeName"].as_str().expect("AttributeName"),
            )
        })
        .collect();
    assert_eq!(
        keys,
        BTreeMap::from([("HASH", schema::PARTITION_KEY), ("RANGE", schema::SORT_KEY)]),
        "{id}: key schema"
    );

    let types: BTreeMap<&str, &str> = p["AttributeDefinitions"]
        .as_array()
        .expect("AttributeDefinitions")
        .iter()
        .map(|a| {
            (
                a["AttributeName"].as_str().expect("AttributeName"),
                a["AttributeType"].as_str().expect("AttributeType"),
            )
        })
        .collect();
    assert_eq!(
        types,
        BTreeMap::from([
            (schema::PARTITION_KEY, schema::PARTITION_KEY_TYPE),
            (schema::SORT_KEY, schema::SORT_KEY_TYPE),
        ]),
        "{id}: attribute definitions (only the keys: the table has no index)"
    );

    assert_eq!(
        p["TimeToLiveSpecification"],
        json!({"AttributeName": schema::TTL_ATTRIBUTE, "Enabled": true}),
        "{id}: time to live"
    );
    assert_eq!(p["BillingMode"], schema::BILLING_MODE, "{id}: billing mode");

    // Protection the issue asks for.
    assert_eq!(
        p["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"], true,
        "{id}: point-in-time recovery"
    );
    assert_eq!(
        p["DeletionProtectionEnabled"], true,
        "{id}: deletion protection"
    );
    assert_eq!(
        p["SSESpecification"]["SSEEnabled"], true,
        "{id}: server-side encryption"
    );
    assert_eq!(
        table["DeletionPolicy"], "Retain",
        "{id}: kept when the stack goes"
    );
    assert_eq!(
        table["UpdateReplacePolicy"], "Retain",
        "{id}: kept on replacement"
    );
    assert!(
        p["StreamSpecification"]["StreamViewType"]
            .as_str()
            .is_some_and(|v| v.contains("NEW_")),
        "{id}: the outbox dispatcher needs the stream with new images"
    );
}

#[test]
fn every_function_is_told_the_table() {
    let t = template();
    let (table, _) = one_of_type(&t, "AWS::DynamoDB::Table");
    for (id, f) in workload_functions(&t) {
        let var = &f["Properties"]["Environment"]["Variables"]["GATEHOUSE_TABLE"];
        assert!(
            is_ref_to(var, table),
            "{id}: GATEHOUSE_TABLE must be Ref {table}, is {var}"
        );
    }
}

// ---- references ---------------------------------------------------------------------------

/// Attributes `Fn::GetAtt` may read, per resource type used in the template.
fn attributes_of(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "AWS::DynamoDB::Table" => &["Arn", "StreamArn"],
        "AWS::IAM::Role" => &["Arn", "RoleId"],
        "AWS::Logs::LogGroup" => &["Arn"],
        "AWS::SQS::Queue" => &["Arn", "QueueName", "QueueUrl"],
        "AWS::Serverless::Function" | "AWS::Lambda::Function" => &["Arn"],
        "AWS::Lambda::Url" => &["FunctionArn", "FunctionUrl"],
        "AWS::SecretsManager::Secret" => &["Id"],
        "AWS::CloudWatch::Alarm" => &["Arn"],
        "AWS::SNS::Topic" => &["TopicArn", "TopicName"],
        "AWS::Logs::MetricFilter" | "AWS::Lambda::Permission" => &[],
        _ => return None,
    })
}

/// The `${...}` variables of a `Fn::Sub` string, without the `${!literal}` escapes.
fn sub_variables(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            break;
        };
        let name = &after[..end];
        if !name.starts_with('!') {
            out.push(name.trim());
        }
        rest = &after[end + 1..];
    }
    out
}

struct Names {
    parameters: BTreeSet<String>,
    resources: BTreeMap<String, String>,
    conditions: BTreeSet<String>,
    mappings: BTreeSet<String>,
}

impl Names {
    fn of(t: &Value) -> Names {
        let keys = |section: &str| -> BTreeSet<String> {
            t.get(section)
                .and_then(Value::as_object)
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default()
        };
        Names {
            parameters: keys("Parameters"),
            resources: t
                .get("Resources")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .map(|(id, r)| (id.clone(), r["Type"].as_str().unwrap_or("").to_owned()))
                        .collect()
                })
                .unwrap_or_default(),
            conditions: keys("Conditions"),
            mappings: keys("Mappings"),
        }
        .with_sam_generated(t)
    }

    /// Adds the resources the SAM transform makes from a function's `AutoPublishAlias` and
    /// `DeploymentPreference`, under the names SAM documents for referring to them.
    fn with_sam_generated(mut self, t: &Value) -> Names {
        for (id, f) in of_type(t, "AWS::Serverless::Function") {
            let p = &f["Properties"];
            let Some(alias) = p["AutoPublishAlias"].as_str() else {
                continue;
            };
            for (name, kind) in [
                (format!("{id}Alias{alias}"), "AWS::Lambda::Alias"),
                (format!("{id}.Alias"), "AWS::Lambda::Alias"),
                (format!("{id}.Version"), "AWS::Lambda::Version"),
            ] {
                self.resources.insert(name, kind.to_owned());
            }
            if p.get("DeploymentPreference").is_some() {
                self.resources.insert(
                    format!("{id}DeploymentGroup"),
                    "AWS::CodeDeploy::DeploymentGroup".to_owned(),
                );
                self.resources.insert(
                    "ServerlessDeploymentApplication".to_owned(),
                    "AWS::CodeDeploy::Application".to_owned(),
                );
            }
        }
        self
    }

    fn check_ref(&self, name: &str, at: &str, locals: &BTreeSet<String>, out: &mut Vec<String>) {
        let known = locals.contains(name)
            || self.parameters.contains(name)
            || self.resources.contains_key(name)
            || PSEUDO_PARAMETERS.contains(&name);
        if !known {
            out.push(format!(
                "{at}: `{name}` is no parameter, resource or pseudo-parameter"
            ));
        }
    }

    fn check_get_att(&self, id: &str, attr: &str, at: &str, out: &mut Vec<String>) {
        let Some(kind) = self.resources.get(id) else {
            out.push(format!("{at}: GetAtt on `{id}`, which is no resource"));
            return;
        };
        match attributes_of(kind) {
            Some(attrs) if attrs.contains(&attr) => {}
            Some(attrs) => out.push(format!(
                "{at}: {kind} `{id}` has no attribute `{attr}` (known: {attrs:?})"
            )),
            None => out.push(format!(
                "{at}: GetAtt on a {kind}: add its attributes to `attributes_of` in tests/it/infra.rs"
            )),
        }
    }

    fn check_condition(&self, name: &Value, at: &str, out: &mut Vec<String>) {
        match name.as_str() {
            Some(n) if self.conditions.contains(n) => {}
            _ => out.push(format!(
                "{at}: condition {name} is not declared in Conditions"
            )),
        }
    }

    /// Walks one value, checking every intrinsic function in it.
    fn walk(&self, v: &Value, at: &str, locals: &BTreeSet<String>, out: &mut Vec<String>) {
        match v {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.walk(item, &format!("{at}[{i}]"), locals, out);
                }
            }
            Value::Object(m) if m.len() == 1 => {
                let (key, arg) = m.iter().next().expect("one entry");
                let here = format!("{at}/{key}");
                match key.as_str() {
                    "Ref" => match arg.as_str() {
                        Some(name) => self.check_ref(name, &here, locals, out),
                        None => out.push(format!("{here}: Ref takes a name")),
                    },
                    "Fn::GetAtt" => match get_att(v) {
                        Some((id, attr)) => self.check_get_att(&id, &attr, &here, out),
                        None => out.push(format!("{here}: GetAtt takes [resource, attribute]")),
                    },
                    "Fn::Sub" => {
                        let (text, vars) = match arg {
                            Value::String(s) => (Some(s.as_str()), None),
                            Value::Array(parts) if parts.len() == 2 => {
                                (parts[0].as_str(), parts[1].as_object())
                            }
                            _ => (None, None),
                        };
                        let Some(text) = text else {
                            out.push(format!("{here}: Sub takes a string or [string, map]"));
                            return;
                        };
                        let mut scope = locals.clone();
                        if let Some(vars) = vars {
                            for (name, value) in vars {
                                self.walk(value, &format!("{here}/{name}"), locals, out);
                                scope.insert(name.clone());
                            }
                        }
                        for var in sub_variables(text) {
                            match var.split_once('.') {
                                Some((id, attr)) if !scope.contains(var) => {
                                    self.check_get_att(id, attr, &here, out)
                                }
                                _ => self.check_ref(var, &here, &scope, out),
                            }
                        }
                    }
                    "Fn::If" => {
                        let parts = arg.as_array().map(Vec::as_slice).unwrap_or_default();
                        if parts.len() == 3 {
                            self.check_condition(&parts[0], &here, out);
                            self.walk(&parts[1], &here, locals, out);
                            self.walk(&parts[2], &here, locals, out);
                        } else {
                            out.push(format!("{here}: If takes [condition, then, else]"));
                        }
                    }
                    // Inside Conditions: a reference to another condition.
                    "Condition" if at.starts_with("Conditions") => {
                        self.check_condition(arg, &here, out)
                    }
                    "Fn::FindInMap" => {
                        let map = arg.get(0).and_then(Value::as_str).unwrap_or_default();
                        if !self.mappings.contains(map) {
                            out.push(format!("{here}: mapping `{map}` is not declared"));
                        }
                        self.walk(arg, &here, locals, out);
                    }
                    _ => self.walk(arg, &here, locals, out),
                }
            }
            Value::Object(m) => {
                for (key, value) in m {
                    self.walk(value, &format!("{at}/{key}"), locals, out);
                }
            }
            _ => {}
        }
    }
}

/// Every reference of the template that does not resolve, described.
fn dangling_references(t: &Value) -> Vec<String> {
    let names = Names::of(t);
    let none = BTreeSet::new();
    let mut out = Vec::new();
    if let Some(conditions) = t.get("Conditions").and_then(Value::as_object) {
        for (name, body) in conditions {
            names.walk(body, &format!("Conditions/{name}"), &none, &mut out);
        }
    }
    for section in ["Resources", "Outputs"] {
        let Some(entries) = t.get(section).and_then(Value::as_object) else {
            continue;
        };
        for (id, entry) in entries {
            let at = format!("{section}/{id}");
            if let Some(condition) = entry.get("Condition") {
                names.check_condition(condition, &at, &mut out);
            }
            for dep in entry.get("DependsOn").map(as_list).unwrap_or_default() {
                match dep.as_str() {
                    Some(d) if names.resources.contains_key(d) => {}
                    _ => out.push(format!("{at}/DependsOn: {dep} is no resource")),
                }
            }
            for part in ["Properties", "Value", "Export"] {
                if let Some(v) = entry.get(part) {
                    names.walk(v, &format!("{at}/{part}"), &none, &mut out);
                }
            }
        }
    }
    out
}

#[test]
fn every_reference_in_the_template_resolves() {
    let dangling = dangling_references(&template());
    assert!(
        dangling.is_empty(),
        "dangling references:\n{}",
        dangling.join("\n")
    );
}

#[test]
fn the_reference_check_finds_what_does_not_resolve() {
    let t = json!({
        "Parameters": {"P": {"Type": "String"}},
        "Conditions": {"C": {"Fn::Equals": [{"Ref": "P"}, ""]}, "D": {"Condition": "Missing"}},
        "Resources": {
            "Q": {"Type": "AWS::SQS::Queue", "Properties": {}},
            "F": {
                "Type": "AWS::Serverless::Function",
                "DependsOn": ["Q", "Gone"],
                "Condition": "Nope",
                "Properties": {
                    "Environment": {"Variables": {
                        "OK_REF": {"Ref": "P"},
                        "OK_PSEUDO": {"Ref": "AWS::Region"},
                        "OK_SUB": {"Fn::Sub": "${Q.Arn}/${AWS::StackName}/${!NotAVariable}"},
                        "OK_SUB_MAP": {"Fn::Sub": ["${Local}", {"Local": {"Ref": "Q"}}]},
                        "OK_IF": {"Fn::If": ["C", {"Ref": "P"}, {"Ref": "AWS::NoValue"}]},
                        "BAD_REF": {"Ref": "Unknown"},
                        "BAD_ATT": {"Fn::GetAtt": ["Q", "Nonsense"]},
                        "BAD_ATT_STR": {"Fn::GetAtt": "Missing.Arn"},
                        "BAD_SUB": {"Fn::Sub": "${Lost}-${Q.Url}"},
                        "BAD_SUB_MAP": {"Fn::Sub": ["${Local}", {"Local": {"Ref": "Away"}}]},
                        "BAD_IF": {"Fn::If": ["NoSuchCondition", "a", "b"]}
                    }}
                }
            }
        },
        "Outputs": {"O": {"Value": {"Fn::GetAtt": ["F", "Arn"]}, "Condition": "C"}}
    });
    let found = dangling_references(&t).join("\n");
    for expected in [
        "Conditions/D/Condition: condition \"Missing\"",
        "Resources/F/DependsOn: \"Gone\"",
        "Resources/F: condition \"Nope\"",
        "BAD_REF/Ref: `Unknown`",
        "BAD_ATT/Fn::GetAtt: AWS::SQS::Queue `Q` has no attribute `Nonsense`",
        "BAD_ATT_STR/Fn::GetAtt: GetAtt on `Missing`",
        "BAD_SUB/Fn::Sub: `Lost`",
        "BAD_SUB/Fn::Sub: AWS::SQS::Queue `Q` has no attribute `Url`",
        "BAD_SUB_MAP/Fn::Sub/Local/Ref: `Away`",
        "BAD_IF/Fn::If: condition \"NoSuchCondition\"",
    ] {
        assert!(found.contains(expected), "missed {expected:?} in:\n{found}");
    }
    assert!(!found.contains("OK_"), "false alarm:\n{found}");
    assert_eq!(found.lines().count(), 10, "{found}");
}

// ---- IAM ----------------------------------------------------------------------------------

/// The IAM actions one `aws-sdk-dynamodb` client call needs, or `None` for a call the test
/// does not know yet.
fn iam_actions(call: &str) -> Option<&'static [&'static str]> {
    Some(match call {
        "get_item" | "transact_get_items" => &["dynamodb:GetItem"],
        "batch_get_item" => &["dynamodb:BatchGetItem"],
        "put_item" => &["dynamodb:PutItem"],
        "update_item" => &["dynamodb:UpdateItem"],
        "delete_item" => &["dynamodb:DeleteItem"],
        "query" => &["dynamodb:Query"],
        "scan" => &["dynamodb:Scan"],
        "batch_write_item" => &["dynamodb:BatchWriteItem"],
        // A transaction is authorized per operation inside it; the store's transactions
        // carry all four kinds.
        "transact_write_items" => &[
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
            "dynamodb:DeleteItem",
            "dynamodb:ConditionCheckItem",
        ],
        // Only `DynamoStore::create_table` (CLI and tests) makes these; the Lambda never calls
        // it (checked below), so its role needs none of them.
        "create_table" | "describe_table" | "describe_time_to_live" | "update_time_to_live" => &[],
        _ => return None,
    })
}

/// The `self.client.<call>()` calls in the DynamoDB backend's non-test sources.
fn dynamodb_client_calls() -> BTreeSet<String> {
    let dir = root().join("shared/store-dynamodb/src");
    let mut calls = BTreeSet::new();
    for entry in std::fs::read_dir(&dir)
        .expect("read store-dynamodb/src")
        .flatten()
    {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "rs") || path.ends_with("tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("read source");
        for (i, _) in text.match_indices(".client") {
            let after = text[i + ".client".len()..].trim_start();
            let Some(after) = after.strip_prefix('.') else {
                continue;
            };
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            if after[name.len()..].starts_with('(') {
                calls.insert(name);
            }
        }
    }
    calls
}

/// The functions that run the whole app on the table: the MCP endpoint and the product's pages.
const APP_FUNCTIONS: [&str; 2] = ["mcp-lambda", "web-lambda"];

/// Where a function's code is: in the entry-point library (the binaries only name the product,
/// or nothing, for the dispatcher).
fn function_source(binary: &str) -> String {
    match binary {
        "mcp-lambda" => "shared/gatehouse-server/src/lambda/mod.rs".to_owned(),
        "web-lambda" => "shared/gatehouse-server/src/web_lambda.rs".to_owned(),
        "outbox-dispatcher" => "shared/gatehouse-server/src/outbox_lambda.rs".to_owned(),
        other => format!("functions/{other}/src/main.rs"),
    }
}

#[test]
fn the_app_roles_grant_exactly_what_the_dynamodb_backend_calls() {
    let calls = dynamodb_client_calls();
    assert!(
        calls.contains("get_item"),
        "no client calls found: {calls:?}"
    );
    let mut needed = BTreeSet::new();
    for call in &calls {
        let actions = iam_actions(call).unwrap_or_else(|| {
            panic!(
                "store-dynamodb calls `client.{call}()`: add its IAM actions to `iam_actions` in \
                 tests/it/infra.rs and grant them in infra/template.json"
            )
        });
        needed.extend(actions.iter().map(|a| (*a).to_owned()));
    }
    for binary in APP_FUNCTIONS {
        let lambda = std::fs::read_to_string(root().join(function_source(binary)))
            .expect("read the function");
        assert!(
            !lambda.contains("create_table"),
            "{binary} creates its table: its role then needs CreateTable, DescribeTable, \
             DescribeTimeToLive and UpdateTimeToLive"
        );
        role_grants_exactly(binary, &needed);
    }
}

fn role_grants_exactly(binary: &str, needed: &BTreeSet<String>) {
    let t = template();
    let (table, _) = one_of_type(&t, "AWS::DynamoDB::Table");
    let function = function_with_binary(&t, binary);
    let (role, r) = role_of(&t, function);
    let mut granted = BTreeSet::new();
    for s in statements(r) {
        let actions: Vec<&str> = as_list(&s["Action"])
            .iter()
            .filter_map(|a| a.as_str())
            .collect();
        if !actions.iter().any(|a| a.starts_with("dynamodb:")) {
            continue;
        }
        for resource in as_list(&s["Resource"]) {
            let on_table = get_att(resource).is_some_and(|(id, attr)| id == table && attr == "Arn")
                || resource["Fn::Sub"]
                    .as_str()
                    .is_some_and(|s| s.starts_with(&format!("${{{table}.Arn}}/index/")));
            assert!(
                on_table,
                "{role}: DynamoDB actions on {resource}, not on the table"
            );
        }
        granted.extend(actions.iter().map(|a| (*a).to_owned()));
    }
    assert_eq!(
        &granted, needed,
        "{role}: DynamoDB actions granted (left) and called by store-dynamodb (right) differ"
    );
}

/// What the dispatcher does to the table: claims and records messages (get, update, and the
/// delete of a delivered message's due entry), sweeps the due index (query), reads dead letters
/// (batch get).
const DISPATCHER_ACTIONS: [&str; 5] = [
    "dynamodb:GetItem",
    "dynamodb:BatchGetItem",
    "dynamodb:Query",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
];

#[test]
fn other_roles_only_read_the_stream_and_the_dispatcher_updates_entries() {
    let t = template();
    let (table, _) = one_of_type(&t, "AWS::DynamoDB::Table");
    let app_roles: Vec<&str> = APP_FUNCTIONS
        .iter()
        .map(|binary| role_of(&t, function_with_binary(&t, binary)).0)
        .collect();
    let stream_reads = [
        "dynamodb:DescribeStream",
        "dynamodb:GetRecords",
        "dynamodb:GetShardIterator",
        "dynamodb:ListStreams",
    ];
    for (role, r) in of_type(&t, "AWS::IAM::Role") {
        if app_roles.contains(&role) {
            continue;
        }
        for s in statements(r) {
            let actions: Vec<&str> = as_list(&s["Action"])
                .iter()
                .filter_map(|a| a.as_str())
                .collect();
            if !actions.iter().any(|a| a.starts_with("dynamodb:")) {
                continue;
            }
            // The dispatcher claims and records outbox messages with conditional writes and
            // sweeps the due index (shared/outbox): exactly these on the table, nothing else.
            if actions == DISPATCHER_ACTIONS {
                let dispatcher = role_of(&t, function_with_binary(&t, "outbox-dispatcher")).0;
                assert_eq!(
                    role, dispatcher,
                    "{role}: only the dispatcher writes items besides the app roles"
                );
                for resource in as_list(&s["Resource"]) {
                    assert!(
                        get_att(resource).is_some_and(|(id, attr)| id == table && attr == "Arn"),
                        "{role}: outbox writes on {resource}"
                    );
                }
                continue;
            }
            for a in &actions {
                assert!(
                    stream_reads.contains(a),
                    "{role}: {a} is more than reading the stream"
                );
            }
            for resource in as_list(&s["Resource"]) {
                assert!(
                    get_att(resource).is_some_and(|(id, attr)| id == table && attr == "StreamArn"),
                    "{role}: stream actions on {resource}, not on the table's stream"
                );
            }
        }
    }
}

#[test]
fn no_iam_statement_has_a_wildcard() {
    let t = template();
    let roles = of_type(&t, "AWS::IAM::Role");
    assert!(
        roles.len() >= 2,
        "every function has its own role in the template"
    );
    for kind in ["AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"] {
        assert!(
            of_type(&t, kind).is_empty(),
            "policies live inline in their role"
        );
    }
    for (role, r) in roles {
        assert!(
            r["Properties"].get("ManagedPolicyArns").is_none(),
            "{role}: managed policies (AWSLambdaBasicExecutionRole, ...) grant on `*`"
        );
        for s in statements(r) {
            assert_eq!(s["Effect"], "Allow", "{role}: {s}");
            for key in ["NotAction", "NotResource"] {
                assert!(s.get(key).is_none(), "{role}: {key} grants everything else");
            }
            for a in as_list(&s["Action"]) {
                let a = a.as_str().unwrap_or_else(|| panic!("{role}: action {a}"));
                assert!(!a.contains('*'), "{role}: wildcard action {a}");
            }
            let resources = as_list(&s["Resource"]);
            assert!(
                !resources.is_empty(),
                "{role}: statement without resource: {s}"
            );
            for resource in resources {
                assert!(
                    resource.is_object(),
                    "{role}: resource {resource} should reference a resource of this template"
                );
            }
        }
    }
    for (id, f) in of_type(&t, "AWS::Serverless::Function") {
        assert!(
            f["Properties"].get("Policies").is_none(),
            "{id}: SAM policy templates add grants outside the role; write them in the role"
        );
    }
}

// ---- functions ------------------------------------------------------------------------------

#[test]
fn functions_are_built_from_this_workspace_for_arm64() {
    let t = template();
    let functions = workload_functions(&t);
    assert!(
        functions.len() >= 2,
        "the MCP function and the outbox dispatcher"
    );
    for (id, f) in functions {
        let p = &f["Properties"];
        assert_eq!(p["Runtime"], "provided.al2023", "{id}");
        assert_eq!(p["Architectures"], json!(["arm64"]), "{id}");
        match f["Metadata"]["BuildMethod"].as_str() {
            Some("rust-cargolambda") => built_by_cargo_lambda(id, f),
            Some("makefile") => built_by_the_makefile(&t, id, f),
            other => panic!("{id}: BuildMethod {other:?}"),
        }
    }
}

/// The Cargo Lambda builder builds in place and takes the binary from
/// `<CodeUri>/target/lambda/<binary>/bootstrap`: CodeUri must be the workspace root.
fn built_by_cargo_lambda(id: &str, f: &Value) {
    let p = &f["Properties"];
    assert_eq!(p["Handler"], "bootstrap", "{id}");
    assert_eq!(
        p["CodeUri"], "..",
        "{id}: CodeUri is the workspace root, from infra/"
    );
    let binary = f["Metadata"]["BuildProperties"]["Binary"]
        .as_str()
        .unwrap_or_else(|| panic!("{id}: Metadata.BuildProperties.Binary"));
    let manifest = root().join("functions").join(binary).join("Cargo.toml");
    if NOT_YET_WRITTEN.contains(&binary) {
        assert!(
            !manifest.exists(),
            "functions/{binary} exists now: remove it from NOT_YET_WRITTEN in tests/it/infra.rs"
        );
    } else {
        let text = std::fs::read_to_string(&manifest)
            .unwrap_or_else(|e| panic!("{id}: {}: {e}", manifest.display()));
        assert!(
            text.contains(&format!("name = \"{binary}\"")),
            "{id}: {} does not name the package `{binary}`",
            manifest.display()
        );
    }
}

/// A function whose product the `Product` parameter chooses (ADR 49): infra/Makefile builds
/// every product's binary for it, and the Handler names the one to run.
fn built_by_the_makefile(t: &Value, id: &str, f: &Value) {
    assert_eq!(
        f["Properties"]["CodeUri"], ".",
        "{id}: CodeUri is infra/, where the Makefile is"
    );
    let mapped: BTreeSet<String> = crate::support::template::binaries_of(t, f)
        .into_iter()
        .collect();
    let products: BTreeSet<&str> = t["Mappings"]["ProductBinaries"]
        .as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let allowed: BTreeSet<&str> = t["Parameters"]["Product"]["AllowedValues"]
        .as_array()
        .map(|v| v.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert_eq!(
        allowed, products,
        "{id}: every allowed Product has its binaries"
    );
    assert_eq!(mapped.len(), products.len(), "{id}: one binary per product");
    let built: BTreeSet<String> = makefile_binaries(id).into_iter().collect();
    assert_eq!(
        built, mapped,
        "{id}: infra/Makefile builds exactly the mapped binaries"
    );
    for binary in &mapped {
        assert!(
            workspace_binaries().contains(binary),
            "{id}: no crate of the workspace has a binary named `{binary}`"
        );
    }
}

/// The binaries infra/Makefile's `build-<id>` target puts in the function's artifact.
fn makefile_binaries(id: &str) -> Vec<String> {
    let makefile = std::fs::read_to_string(root().join("infra/Makefile")).expect("infra/Makefile");
    let target = format!("build-{id}:");
    let recipe = makefile
        .split_once(&format!("\n{target}\n"))
        .and_then(|(_, after)| after.lines().next())
        .unwrap_or_else(|| panic!("infra/Makefile has no `{target}` target"));
    let variable = recipe
        .trim()
        .strip_prefix("$(call artifact,$(")
        .and_then(|v| v.strip_suffix("))"))
        .unwrap_or_else(|| panic!("{target} builds `$(call artifact,$(VARIABLE))`: {recipe}"));
    makefile
        .lines()
        .find_map(|line| line.strip_prefix(&format!("{variable} ?= ")))
        .unwrap_or_else(|| panic!("infra/Makefile does not set {variable}"))
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// Every binary a crate of the workspace declares (`[[bin]] name = ...`, or a package's own).
fn workspace_binaries() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for folder in ["functions", "examples"] {
        let Ok(entries) = std::fs::read_dir(root().join(folder)) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(text) = std::fs::read_to_string(entry.path().join("Cargo.toml")) else {
                continue;
            };
            names.extend(text.lines().filter_map(|line| {
                let value = line.trim().strip_prefix("name = \"")?;
                Some(value.strip_suffix('"')?.to_owned())
            }));
        }
    }
    names
}

#[test]
fn functions_log_to_their_own_group_with_retention() {
    let t = template();
    for (id, g) in of_type(&t, "AWS::Logs::LogGroup") {
        assert!(
            g["Properties"].get("RetentionInDays").is_some(),
            "{id}: log group without retention keeps logs forever"
        );
    }
    for (id, f) in of_type(&t, "AWS::Serverless::Function") {
        let group = f["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]
            .as_str()
            .unwrap_or_else(|| panic!("{id}: LoggingConfig.LogGroup must Ref a log group"));
        assert_eq!(resources(&t)[group]["Type"], "AWS::Logs::LogGroup", "{id}");
        let (role, r) = role_of(&t, id);
        let writes_there = statements(r).iter().any(|s| {
            as_list(&s["Action"]).contains(&&json!("logs:PutLogEvents"))
                && as_list(&s["Resource"])
                    .iter()
                    .all(|res| get_att(res).is_some_and(|(g, _)| g == group))
        });
        assert!(
            writes_there,
            "{role}: may not write to {group}, the log group of {id}"
        );
    }
}

#[test]
fn no_secret_travels_in_the_environment() {
    let t = template();
    let text = serde_json::to_string(&t).expect("serialize");
    assert!(
        !text.contains("{{resolve:"),
        "a dynamic reference resolves into the environment in clear: read the secret at cold start"
    );
    for (id, f) in of_type(&t, "AWS::Serverless::Function") {
        let vars = f["Properties"]["Environment"]["Variables"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert!(
            !vars.contains_key("GATEHOUSE_STATE_KEY"),
            "{id}: the sealing key comes from Secrets Manager, never the environment"
        );
        for name in vars.keys() {
            let sensitive = ["KEY", "SECRET", "TOKEN", "PASSWORD"]
                .iter()
                .any(|w| name.contains(w));
            assert!(
                !sensitive || name.ends_with("_ARN"),
                "{id}: {name} looks like a secret; pass the secret's ARN instead"
            );
        }
    }
    for (name, p) in t["Parameters"].as_object().expect("Parameters") {
        assert!(
            p.get("NoEcho").is_none(),
            "parameter {name}: secrets do not pass through parameters (they end up in the environment)"
        );
    }
    let secret = "StateKeySecret";
    assert_eq!(resources(&t)[secret]["Type"], "AWS::SecretsManager::Secret");
    let mcp = function_with_binary(&t, "mcp-lambda");
    assert!(
        is_ref_to(
            &resources(&t)[mcp]["Properties"]["Environment"]["Variables"]["GATEHOUSE_STATE_KEY_SECRET_ARN"],
            secret
        ),
        "{mcp}: GATEHOUSE_STATE_KEY_SECRET_ARN must name {secret}"
    );
}

#[test]
fn the_template_sets_what_the_app_functions_read() {
    for binary in APP_FUNCTIONS {
        the_template_sets_what_it_reads(binary);
    }
    the_template_sets_what_it_reads("outbox-dispatcher");
}

fn the_template_sets_what_it_reads(binary: &str) {
    let mut source =
        std::fs::read_to_string(root().join(function_source(binary))).expect("read the function");
    if binary == "mcp-lambda" {
        // The variables it shares with the edge Worker are named in `app::settings`.
        source += &std::fs::read_to_string(root().join("shared/app/src/settings.rs")).unwrap();
    }
    // Every string literal that is exactly an environment variable name.
    let read: BTreeSet<&str> = source
        .match_indices("\"GATEHOUSE_")
        .filter_map(|(i, _)| {
            let rest = &source[i + 1..];
            let end =
                rest.find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))?;
            rest[end..].starts_with('"').then(|| &rest[..end])
        })
        .collect();
    assert!(read.contains("GATEHOUSE_TABLE"), "{read:?}");
    // Not set on purpose: a local DynamoDB-compatible server only; the key itself (the
    // function is given the secret's ARN instead, see infra/README.md).
    // The webhook's secret is given directly only on one machine (a deployment passes its ARN).
    // The MCP endpoint's URL likewise (a deployment names the parameter holding it).
    let not_set = [
        "GATEHOUSE_DYNAMODB_ENDPOINT",
        "GATEHOUSE_STATE_KEY",
        "GATEHOUSE_WEBHOOK_SECRET",
        "GATEHOUSE_MCP_URL",
    ];
    let t = template();
    let function = function_with_binary(&t, binary);
    let vars = &resources(&t)[function]["Properties"]["Environment"]["Variables"];
    for name in read {
        assert!(
            vars.get(name).is_some() || not_set.contains(&name),
            "{function}: {binary} reads {name} but the template does not set it"
        );
    }
}

/// The web function learns the MCP endpoint's URL from a parameter it may read, through the
/// extension layer: passing the URL itself would make each function depend on the other's.
#[test]
fn the_web_function_reads_the_mcp_endpoint_from_its_parameter() {
    let t = template();
    let parameter = &resources(&t)["McpEndpointParameter"];
    assert_eq!(parameter["Type"], "AWS::SSM::Parameter");
    assert_eq!(
        parameter["Properties"]["Value"]["Fn::Sub"],
        "${McpFunctionUrl.FunctionUrl}mcp"
    );
    let name = parameter["Properties"]["Name"]["Fn::Sub"].as_str().unwrap();
    let web = function_with_binary(&t, "web-lambda");
    let props = &resources(&t)[web]["Properties"];
    assert_eq!(
        props["Environment"]["Variables"]["GATEHOUSE_MCP_URL_PARAMETER"]["Fn::Sub"],
        name
    );
    assert!(
        as_list(&props["Layers"])
            .iter()
            .any(|l| is_ref_to(l, "SecretsExtensionLayerArn")),
        "{web}: the extension layer serves the parameter"
    );
    let role = props["Role"]["Fn::GetAtt"][0].as_str().unwrap();
    let policies = resources(&t)[role]["Properties"]["Policies"].to_string();
    let arn =
        format!("arn:${{AWS::Partition}}:ssm:${{AWS::Region}}:${{AWS::AccountId}}:parameter{name}");
    assert!(
        policies.contains("ssm:GetParameter") && policies.contains(&arn),
        "{role} may read {name} and nothing else: {policies}"
    );
}

// ---- alarms and checkov -------------------------------------------------------------------

fn alarm_on(t: &Value, namespace: &str, metric: &str, dimension: Option<&str>) -> bool {
    of_type(t, "AWS::CloudWatch::Alarm").iter().any(|(_, a)| {
        let p = &a["Properties"];
        let namespace_ok =
            p["Namespace"] == namespace || p["Namespace"]["Fn::Sub"].as_str() == Some(namespace);
        let dimension_ok = match dimension {
            Some(id) => as_list(&p["Dimensions"])
                .iter()
                .any(|d| is_ref_to(&d["Value"], id)),
            None => true,
        };
        namespace_ok && p["MetricName"] == metric && dimension_ok && p.get("Threshold").is_some()
    })
}

#[test]
fn alarms_watch_errors_throttles_and_the_kill_switch() {
    let t = template();
    for (id, _) in workload_functions(&t) {
        for metric in ["Errors", "Throttles"] {
            assert!(
                alarm_on(&t, "AWS/Lambda", metric, Some(id)),
                "{id}: no alarm on {metric}"
            );
        }
    }
    let mcp = function_with_binary(&t, "mcp-lambda");
    let group = resources(&t)[mcp]["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]
        .as_str()
        .expect("log group");
    let filter = of_type(&t, "AWS::Logs::MetricFilter")
        .into_iter()
        .map(|(_, f)| &f["Properties"])
        .find(|p| {
            is_ref_to(&p["LogGroupName"], group)
                && p["FilterPattern"]
                    .as_str()
                    .is_some_and(|f| f.contains(KILL_SWITCH_LOG_PHRASE))
        })
        .unwrap_or_else(|| panic!("no metric filter for {KILL_SWITCH_LOG_PHRASE:?} on {group}"));
    let m = &filter["MetricTransformations"][0];
    let namespace = m["MetricNamespace"]["Fn::Sub"]
        .as_str()
        .or(m["MetricNamespace"].as_str())
        .expect("namespace");
    let metric = m["MetricName"].as_str().expect("metric name");
    assert!(
        alarm_on(&t, namespace, metric, None),
        "no alarm on {namespace}/{metric}"
    );
}

#[test]
fn every_checkov_skip_is_justified_next_to_its_resource() {
    let t = template();
    let mut count = 0;
    for (id, r) in resources(&t) {
        for skip in as_list(&r["Metadata"]["checkov"]["skip"]) {
            count += 1;
            let check = skip["id"].as_str().unwrap_or_default();
            assert!(
                check.starts_with("CKV"),
                "{id}: skip without a check id: {skip}"
            );
            let why = skip["comment"].as_str().unwrap_or_default();
            assert!(
                why.len() >= 60,
                "{id}: skip of {check} needs a real justification"
            );
        }
    }
    assert!(count > 0, "no checkov skips found where they are expected");
}

#[test]
fn approval_links_point_at_the_product_web_function() {
    let t = template();
    let mcp = function_with_binary(&t, "mcp-lambda");
    let web = function_with_binary(&t, "web-lambda");
    let (url, _) = of_type(&t, "AWS::Lambda::Url")
        .into_iter()
        .find(|(_, u)| {
            get_att(&u["Properties"]["TargetFunctionArn"]).is_some_and(|(id, _)| id == web)
        })
        .unwrap_or_else(|| panic!("{web} has no Function URL"));
    let base = &resources(&t)[mcp]["Properties"]["Environment"]["Variables"]["GATEHOUSE_CONSOLE_BASE"]
        ["Fn::Sub"];
    assert_eq!(
        base.as_str(),
        Some(format!("${{{url}.FunctionUrl}}app").as_str()),
        "{mcp}: approval and console links must point at {web}'s pages"
    );
}
