//! A customer created over MCP and her deletion prepared: the start of the tests that confirm
//! (or fail to confirm) a two-step action.

use mcp_test_client::TestClient;
use serde_json::{Value, json};

/// A prepared deletion: the customer and the arguments of the `confirm_action` that executes it.
pub(crate) struct PreparedDeletion {
    pub(crate) customer: String,
    /// The preview's structured content.
    pub(crate) preview: Value,
    pub(crate) confirm_arguments: Value,
}

/// Creates the customer `email` with `client` and prepares her deletion (asserting a preview).
pub(crate) async fn prepare(client: &TestClient, email: &str) -> PreparedDeletion {
    let created = client
        .call_tool(
            "create_customer",
            json!({"name": "Grace Hopper", "email": email}),
        )
        .await;
    let customer = created.structured()["customer"]["customer"].clone();
    let preview = client
        .call_tool("delete_customer", json!({"customer": customer}))
        .await;
    let shown = preview.structured();
    assert_eq!(shown["status"], "PREVIEW", "{}", preview.text());
    PreparedDeletion {
        customer: customer.as_str().expect("a handle").to_owned(),
        preview: shown.clone(),
        confirm_arguments: json!({
            "confirm_token": shown["confirm_token"],
            "confirm_summary": shown["confirm_summary"]}),
    }
}
