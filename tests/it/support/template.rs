//! Reading the deployment template (`infra/template.json`) in tests: its resources by type,
//! intrinsic functions, roles and functions.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

pub(crate) fn template() -> Value {
    let path = root().join("infra/template.json");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))
}

pub(crate) fn resources(t: &Value) -> &Map<String, Value> {
    t["Resources"].as_object().expect("Resources")
}

pub(crate) fn of_type<'a>(t: &'a Value, kind: &str) -> Vec<(&'a str, &'a Value)> {
    resources(t)
        .iter()
        .filter(|(_, r)| r["Type"] == kind)
        .map(|(id, r)| (id.as_str(), r))
        .collect()
}

pub(crate) fn one_of_type<'a>(t: &'a Value, kind: &str) -> (&'a str, &'a Value) {
    let all = of_type(t, kind);
    assert_eq!(
        all.len(),
        1,
        "expected exactly one {kind}, found {}",
        all.len()
    );
    all[0]
}

/// The functions CodeDeploy runs as deployment hooks (named in a `DeploymentPreference`).
pub(crate) fn hook_functions(t: &Value) -> BTreeSet<String> {
    of_type(t, "AWS::Serverless::Function")
        .iter()
        .filter_map(|(_, f)| f["Properties"]["DeploymentPreference"]["Hooks"].as_object())
        .flat_map(|hooks| hooks.values())
        .filter_map(|h| h["Ref"].as_str().map(str::to_owned))
        .collect()
}

/// The functions that serve: every function but the deployment hooks.
pub(crate) fn workload_functions(t: &Value) -> Vec<(&str, &Value)> {
    let hooks = hook_functions(t);
    of_type(t, "AWS::Serverless::Function")
        .into_iter()
        .filter(|(id, _)| !hooks.contains(*id))
        .collect()
}

/// `{"Ref": id}`.
pub(crate) fn is_ref_to(v: &Value, id: &str) -> bool {
    v.get("Ref").and_then(Value::as_str) == Some(id)
}

/// `{"Fn::GetAtt": [id, attr]}` or `{"Fn::GetAtt": "id.attr"}`, as `(id, attr)`.
pub(crate) fn get_att(v: &Value) -> Option<(String, String)> {
    match v.get("Fn::GetAtt")? {
        Value::Array(parts) if parts.len() == 2 => {
            Some((parts[0].as_str()?.to_owned(), parts[1].as_str()?.to_owned()))
        }
        Value::String(s) => s.split_once('.').map(|(a, b)| (a.to_owned(), b.to_owned())),
        _ => None,
    }
}

pub(crate) fn as_list(v: &Value) -> Vec<&Value> {
    match v {
        Value::Array(items) => items.iter().collect(),
        Value::Null => Vec::new(),
        other => vec![other],
    }
}

/// The statements of a role's inline policies.
pub(crate) fn statements(role: &Value) -> Vec<&Value> {
    role["Properties"]["Policies"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .flat_map(|p| as_list(&p["PolicyDocument"]["Statement"]))
        .collect()
}

/// The role a function runs with (`Role: !GetAtt X.Arn`).
pub(crate) fn role_of<'a>(t: &'a Value, function: &str) -> (&'a str, &'a Value) {
    let f = &resources(t)[function];
    let (role, attr) = get_att(&f["Properties"]["Role"])
        .unwrap_or_else(|| panic!("{function}: Role must be the GetAtt Arn of a role here"));
    assert_eq!(attr, "Arn");
    let (id, r) = resources(t)
        .get_key_value(&role)
        .unwrap_or_else(|| panic!("{function}: role {role} missing"));
    assert_eq!(
        r["Type"], "AWS::IAM::Role",
        "{function}: {role} must be an IAM role"
    );
    (id.as_str(), r)
}

pub(crate) fn function_with_binary<'a>(t: &'a Value, binary: &str) -> &'a str {
    of_type(t, "AWS::Serverless::Function")
        .into_iter()
        .find(|(_, f)| binaries_of(t, f).iter().any(|b| b == binary))
        .map(|(id, _)| id)
        .unwrap_or_else(|| panic!("no function builds the `{binary}` binary"))
}

/// The binaries a function may run: the one its Cargo Lambda build names, or, for a function
/// whose Handler picks a product's binary from a mapping (infra/Makefile builds them all and
/// its `bootstrap` runs the Handler's), every product's.
pub(crate) fn binaries_of(t: &Value, f: &Value) -> Vec<String> {
    if let Some(binary) = f["Metadata"]["BuildProperties"]["Binary"].as_str() {
        return vec![binary.to_owned()];
    }
    let Some([map, _, key]) = f["Properties"]["Handler"]["Fn::FindInMap"]
        .as_array()
        .map(Vec::as_slice)
    else {
        return Vec::new();
    };
    let (Some(map), Some(key)) = (map.as_str(), key.as_str()) else {
        return Vec::new();
    };
    t["Mappings"][map]
        .as_object()
        .into_iter()
        .flat_map(|products| products.values())
        .filter_map(|binaries| binaries[key].as_str().map(str::to_owned))
        .collect()
}
