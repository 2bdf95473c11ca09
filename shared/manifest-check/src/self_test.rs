//! Proof that the checker catches every defect class.

use serde_json::{Value, json};

use crate::{
    DefectClass, Options, Report, check, check_names_listed, check_same_order, check_with,
};

/// The description of [`good_tool`] (one whole string per line).
const GOOD_DESCRIPTION: &str = concat!(
    "Returns one widget with its handle, version and state. Use it when you ",
    "know the widget's handle; find_widgets searches. Changes nothing. ",
    "Example: {\"widget\": \"wdg_4fK2aZ9qLm\"}",
);

/// A descriptor that breaks no rule.
fn good_tool() -> Value {
    json!({
        "name": "get_widget",
        "title": "Get a widget",
        "description": GOOD_DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "properties": {"widget": {"type": "string", "description": "The widget's handle."}},
            "required": ["widget"],
            "additionalProperties": false
        },
        "outputSchema": {"type": "object", "properties": {"summary": {"type": "string"}}},
        "annotations": {
            "title": "Get a widget",
            "readOnlyHint": true,
            "destructiveHint": false,
            "idempotentHint": true,
            "openWorldHint": false
        }
    })
}

/// A second good descriptor, for order and uniqueness cases.
fn other_tool() -> Value {
    let mut tool = good_tool();
    tool["name"] = json!("get_gadget");
    tool
}

fn mutated(change: impl FnOnce(&mut Value)) -> Report {
    let mut tool = good_tool();
    change(&mut tool);
    check(&json!({ "tools": [tool] }))
}

fn remove(value: &mut Value, key: &str) {
    if let Some(map) = value.as_object_mut() {
        map.remove(key);
    }
}

/// `prose` with a valid example after it.
fn described(prose: &str) -> String {
    format!("{prose} Example: {{\"widget\": \"wdg_4fK2aZ9qLm\"}}")
}

/// The report of the case built to show `class`.
fn case(class: DefectClass) -> Report {
    match class {
        DefectClass::Malformed => check(&json!([good_tool(), "not a descriptor"])),
        DefectClass::Name => mutated(|t| t["name"] = json!("GetWidget")),
        DefectClass::DuplicateName => check(&json!([good_tool(), good_tool()])),
        DefectClass::OrderChanged => check_same_order(
            &json!({ "tools": [good_tool(), other_tool()] }),
            &json!([other_tool(), good_tool()]),
        ),
        DefectClass::NamesUnlisted => {
            let mut tool = good_tool();
            tool["description"] = json!(described("Returns a widget; remove_widget deletes one."));
            check_names_listed(&json!([tool]), &["get_widget", "remove_widget"])
        }
        DefectClass::MissingTitle => mutated(|t| {
            remove(t, "title");
            remove(&mut t["annotations"], "title");
        }),
        DefectClass::MissingAnnotations => {
            mutated(|t| remove(&mut t["annotations"], "openWorldHint"))
        }
        DefectClass::ReadOnlyDestructive => {
            mutated(|t| t["annotations"]["destructiveHint"] = json!(true))
        }
        DefectClass::ReadNotReadOnly => {
            mutated(|t| t["annotations"]["readOnlyHint"] = json!(false))
        }
        DefectClass::DeleteNotDestructive => mutated(|t| t["name"] = json!("delete_widget")),
        DefectClass::ReachNotOpenWorld => mutated(|t| t["name"] = json!("send_widget")),
        DefectClass::NoEffectClass => {
            mutated(|t| t["annotations"]["idempotentHint"] = json!(false))
        }
        DefectClass::TenantParameter => mutated(|t| {
            t["inputSchema"]["properties"]["workspace_id"] = json!({"type": "string"});
        }),
        DefectClass::InputSchema => {
            mutated(|t| t["inputSchema"]["additionalProperties"] = json!(true))
        }
        DefectClass::OutputSchema => mutated(|t| remove(t, "outputSchema")),
        DefectClass::MissingDescription
        | DefectClass::NonEnglishDescription
        | DefectClass::LongLead
        | DefectClass::LongDescription
        | DefectClass::MissingExample
        | DefectClass::InvalidExample
        | DefectClass::ExampleUnknownProperty
        | DefectClass::ModelInstruction => description_case(class),
        DefectClass::UnmarkedExternalEffect => mutated(|t| {
            t["name"] = json!("send_widget");
            t["description"] = json!(
                "Sends one widget to its owner at once. Example: {\"widget\": \"wdg_4fK2aZ9qLm\"}"
            );
            t["annotations"]["readOnlyHint"] = json!(false);
            t["annotations"]["idempotentHint"] = json!(false);
            t["annotations"]["openWorldHint"] = json!(true);
        }),
        DefectClass::TooManyTools => check_with(
            &json!([good_tool()]),
            Options {
                max_tools: Some(0),
                ..Options::default()
            },
        ),
    }
}

/// The report of a case whose defect is in the description.
fn description_case(class: DefectClass) -> Report {
    let description = match class {
        DefectClass::MissingDescription => "  ".to_owned(),
        DefectClass::NonEnglishDescription => described(
            "Liefert genau ein Objekt über seinen Schlüssel zurück. Ändert nichts.",
        ),
        DefectClass::LongLead => described(&format!(
            "Returns one widget{}.",
            " and the state of the widget".repeat(12)
        )),
        DefectClass::LongDescription => described(&format!(
            "Returns one widget. {}",
            "It changes nothing at all. ".repeat(40)
        )),
        DefectClass::MissingExample => "Returns one widget with its handle. Changes nothing.".to_owned(),
        DefectClass::InvalidExample => {
            "Returns one widget with its handle. Example: {widget: wdg_1}".to_owned()
        }
        DefectClass::ExampleUnknownProperty => {
            "Returns one widget with its handle. Example: {\"widget\": \"wdg_1\", \"colour\": \"red\"}".to_owned()
        }
        // The remaining class in this group: an instruction to the model.
        _ => described("Returns one widget with its handle. Always call it before find_widgets."),
    };
    mutated(|t| t["description"] = json!(description))
}

/// Proves the checker: the good descriptor yields nothing, and for each defect class a mutated
/// copy yields that class and no other. Returns how many classes were proven, or names the
/// first class that was not caught (or that came with another class).
pub fn self_test() -> Result<usize, String> {
    let good = [
        ("one good tool", check(&json!({ "tools": [good_tool()] }))),
        (
            "two good tools",
            check_with(
                &json!([good_tool(), other_tool()]),
                Options {
                    max_tools: Some(2),
                    ..Options::default()
                },
            ),
        ),
        (
            "tools naming only listed tools",
            check_names_listed(
                &json!([good_tool(), other_tool()]),
                &["get_widget", "get_gadget"],
            ),
        ),
        (
            "the same order twice",
            check_same_order(
                &json!([good_tool(), other_tool()]),
                &json!({ "result": { "tools": [other_tool()] } }),
            ),
        ),
    ];
    for (what, report) in good {
        if !report.is_clean() {
            return Err(format!(
                "{what} should be clean but the check found:\n{}",
                report.to_text()
            ));
        }
    }
    for class in DefectClass::ALL {
        let report = case(class);
        let classes = report.classes();
        if !classes.contains(&class) {
            return Err(format!(
                "defect class `{class}` was not caught; the mutated copy gave:\n{}",
                report.to_text()
            ));
        }
        if classes.len() != 1 {
            return Err(format!(
                "defect class `{class}` came with other classes:\n{}",
                report.to_text()
            ));
        }
    }
    Ok(DefectClass::ALL.len())
}
