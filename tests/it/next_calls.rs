//! Errors lead on (issue 16, in part): the next call an error names is one the connection
//! lists, with arguments its schema takes, and it works when followed verbatim: an unknown
//! record points to the tool that lists that kind; a stale version to the re-read; an unknown
//! argument to the same call without it; a confirmed booking changed silently to the move
//! that tells the customer, or, where the connection cannot make that call, to the user.

use mcp_pipeline::Toolset;
use mcp_test_client::{TestClient, ToolCall};
use serde_json::{Value, json};

use crate::booking_tools::{confirmed_booking, seeded_customer, seeded_technician, setup};
use crate::support::on_every_backend;
use crate::world::World;

/// Follows `call`'s `next_call` verbatim: the tool must be listed for `c` and the answer
/// not an error.
async fn follow(c: &TestClient, from: &ToolCall) -> ToolCall {
    let next = from.structured()["next_call"]
        .as_str()
        .unwrap_or_else(|| panic!("no next_call in {}", from.text()));
    let (tool, args) = next.split_once(' ').unwrap_or((next, "{}"));
    let listed = c.list_tools().await;
    assert!(
        listed["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == tool),
        "{tool} is not listed for this connection"
    );
    let args: Value =
        serde_json::from_str(args).unwrap_or_else(|_| panic!("{next}: arguments are not JSON"));
    let followed = c.call_tool(tool, args).await;
    assert!(!followed.is_error(), "{next}: {}", followed.text());
    followed
}

async fn error_next_calls_work_when_followed(world: World) {
    let (c, _) = setup(&world).await;
    crate::booking_tools::tenant_settings(&world, "acme", "EUR", "19").await;
    let ada = seeded_customer(&world, "acme", "Ada Lovelace", "ada@example.com").await;
    let tom = seeded_technician(&world, "acme", "Tom Weber", "Europe/Berlin").await;
    let unknown = "cus_0000000000000000000X";
    for (tool, args) in [
        ("get_customer", json!({"customer": unknown})),
        (
            "get_booking",
            json!({"booking": "bkg_0000000000000000000X"}),
        ),
        ("get_quote", json!({"quote": "quo_0000000000000000000X"})),
        (
            "find_available_slots",
            json!({"technician": "tec_0000000000000000000X", "date": "2055-06-07", "duration_minutes": 60}),
        ),
    ] {
        let missing = c.call_tool(tool, args).await;
        assert_eq!(
            missing.structured()["code"],
            "not_found",
            "{tool}: {}",
            missing.text()
        );
        follow(&c, &missing).await;
    }
    // A stale version: the re-read, then the change on the current version works.
    let customer = c
        .call_tool("get_customer", json!({"customer": ada}))
        .await
        .structured()["customer"]
        .clone();
    let stale = c
        .call_tool(
            "update_customer",
            json!({"customer": ada, "version": "000000000000", "phone": "+49 30 1"}),
        )
        .await;
    assert_eq!(stale.structured()["code"], "conflict", "{}", stale.text());
    let reread = follow(&c, &stale).await;
    assert_eq!(
        reread.structured()["customer"]["version"],
        customer["version"]
    );
    // And the retry on the current version, offered for when the change since was the
    // caller's own: the same change, with only the version replaced.
    let retry = stale.structured()["options"][0]["call"].as_str().unwrap();
    let expected = format!(
        "update_customer {}",
        json!({"customer": ada, "version": customer["version"], "phone": "+49 30 1"})
    );
    assert_eq!(retry, expected, "{}", stale.text());
    let (tool, args) = retry.split_once(' ').unwrap();
    let retried = c.call_tool(tool, serde_json::from_str(args).unwrap()).await;
    assert!(!retried.is_error(), "{}", retried.text());
    // An unknown argument: the same call without it.
    let extra = c
        .call_tool(
            "get_customer",
            json!({"customer": ada, "include_history": true}),
        )
        .await;
    assert_eq!(extra.structured()["code"], "validation");
    follow(&c, &extra).await;
    // A confirmed booking is moved with the call that tells the customer.
    let b = confirmed_booking(&c, &ada, &tom, "2055-06-07 09:00").await;
    let silent = c
        .call_tool("update_booking", json!({"booking": b["booking"], "version": b["version"], "start": "2055-06-08 09:00", "zone": "Europe/Berlin"}))
        .await;
    assert_eq!(silent.structured()["code"], "rejected", "{}", silent.text());
    let preview = follow(&c, &silent).await;
    assert_eq!(preview.structured()["status"], "PREVIEW");
    // On a core connection that call is not listed: the error hands over to the user.
    let (_, core) = world.connect("acme", "ana", Toolset::Core).await;
    let core = world.client(&core);
    let refused = core
        .call_tool("update_booking", json!({"booking": b["booking"], "version": b["version"], "start": "2055-06-08 09:00", "zone": "Europe/Berlin"}))
        .await;
    assert!(
        refused.structured().get("next_call").is_none(),
        "{}",
        refused.text()
    );
    assert!(
        refused.structured()["fix"]
            .as_str()
            .unwrap()
            .contains("tell the user"),
        "{}",
        refused.text()
    );
    assert!(!refused.text().contains("Next call: reschedule_booking"));
}
on_every_backend!(followed, error_next_calls_work_when_followed);
