//! The tool model: the listing (order, schemas, annotations) and registration.

use std::sync::Arc;

use mcp_pipeline::{CallError, EffectClass, Registry, Success, Tool, ToolContext, ToolSpec};
use serde_json::json;

use crate::support::probe_tools::{Done, Empty, Log, Mode, OpenAction, client, fixture, recorder};

#[tokio::test]
async fn tools_are_listed_in_registration_order_with_derived_schemas_and_annotations() {
    let f = fixture();
    let list = client(&f).list_tools().await;
    let tools = list["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "echo_args",
            "guarded_action",
            "open_action",
            "intercepted_action",
            "failing_action",
            "unhandled_action",
            "panicking_action",
            "notify_customer",
            "ask_user",
            "delete_thing",
            // Registered by the server because two-step tools are: every server keeps pending
            // actions in its store.
            "confirm_action",
            "reject_action"
        ]
    );
    for tool in tools {
        let name = tool["name"].as_str().unwrap();
        assert!(name.len() <= 40);
        assert_eq!(tool["inputSchema"]["type"], "object", "{name}");
        assert_eq!(tool["inputSchema"]["additionalProperties"], false, "{name}");
        let any_of = tool["outputSchema"]["anyOf"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: outputSchema covers success and error"));
        // Success, then (for tools that prepare) the preview, then the error.
        let prepares = matches!(name, "notify_customer" | "delete_thing");
        assert_eq!(any_of.len(), if prepares { 3 } else { 2 }, "{name}");
        if prepares {
            assert_eq!(any_of[1]["properties"]["status"]["const"], "PREVIEW");
        }
        assert_eq!(any_of.last().unwrap()["properties"]["error"]["const"], true);
        let marked = tool["_meta"]["anthropic/requiresUserInteraction"] == true;
        assert_eq!(marked, name == "confirm_action", "{name}");
        assert!(tool["title"].is_string() && tool["description"].is_string());
    }
    let by_name = |n: &str| tools.iter().find(|t| t["name"] == n).unwrap()["annotations"].clone();
    assert_eq!(by_name("echo_args")["readOnlyHint"], true);
    assert_eq!(by_name("guarded_action")["readOnlyHint"], false);
    assert_eq!(by_name("guarded_action")["idempotentHint"], true);
    assert_eq!(by_name("notify_customer")["openWorldHint"], true);
    assert_eq!(by_name("delete_thing")["destructiveHint"], true);
    let echo = tools.iter().find(|t| t["name"] == "echo_args").unwrap();
    assert_eq!(echo["inputSchema"]["required"], json!(["text"]));
}

#[test]
fn annotations_come_from_the_effect_class_alone() {
    for class in [
        EffectClass::Read,
        EffectClass::SilentWrite,
        EffectClass::Notify,
        EffectClass::Wake,
        EffectClass::Alerting,
        EffectClass::Delete,
    ] {
        let a = class.annotations("t");
        assert_eq!(a["readOnlyHint"], class == EffectClass::Read);
        assert_eq!(
            a["destructiveHint"],
            matches!(class, EffectClass::Alerting | EffectClass::Delete)
        );
        assert_eq!(
            class.needs_confirmation(),
            !matches!(class, EffectClass::Read | EffectClass::SilentWrite)
        );
    }
}

#[test]
fn registration_refuses_bad_names_and_duplicates() {
    let log: Log = Arc::default();
    let mut registry = Registry::new();
    registry
        .register(ToolSpec::new(OpenAction(recorder(
            "open_action",
            &log,
            Mode::Ok,
        ))))
        .unwrap();
    let again = registry.register(ToolSpec::new(OpenAction(recorder(
        "open_action",
        &log,
        Mode::Ok,
    ))));
    assert_eq!(
        again,
        Err(mcp_pipeline::RegistryError::Duplicate("open_action".into()))
    );
    struct BadName;
    impl Tool for BadName {
        type Input = Empty;
        type Output = Done;
        const NAME: &'static str = "BadName";
        const TITLE: &'static str = "x";
        const DESCRIPTION: &'static str = "x";
        type Effect = mcp_pipeline::effects::Read;
        async fn call(
            &self,
            _: ToolContext<Self::Effect>,
            _: Empty,
        ) -> Result<Success<Done>, CallError> {
            Ok(Success::new("x", Done { done: true }))
        }
    }
    assert!(matches!(
        registry.register(ToolSpec::new(BadName)),
        Err(mcp_pipeline::RegistryError::BadName(_))
    ));
}
