//! The kill switch flipped while a write is in flight: nothing of it commits.

use std::sync::atomic::Ordering;

use mcp_pipeline::Limits;
use serde_json::json;
use store::Store as _;

use crate::support::notes::{Notes, title_key};
use crate::support::on_every_backend;

async fn a_write_in_flight_when_the_switch_flips_does_not_commit(n: Notes) {
    let c = n.client();
    n.incident.store(true, Ordering::SeqCst);
    let call = c
        .call_tool(
            "create_note",
            json!({"title": "During incident", "body": "x"}),
        )
        .await;
    assert!(call.is_error());
    assert_eq!(call.structured()["switched_off"], true, "{}", call.text());
    assert!(n.notes().await.is_empty(), "no row");
    assert!(
        n.audit_actions().await.is_empty(),
        "no audit row for the tool"
    );
    let title_claim = n
        .app
        .store
        .get(&title_key("acme", "During incident"))
        .await
        .unwrap();
    assert!(title_claim.is_none(), "no uniqueness claim either");
    let r = c
        .request(
            "tools/call",
            json!({"name": "create_note", "arguments": {"title": "After", "body": "x"}}),
        )
        .await;
    assert_eq!(r.status, 503, "the next call is stopped at the door");
}
on_every_backend!(
    switch_mid_flight,
    a_write_in_flight_when_the_switch_flips_does_not_commit,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);
