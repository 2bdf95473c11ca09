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

/// Twenty writes in flight (their bodies done, their commits not yet sent) when the switch is
/// engaged: none commits, because every commit checks the switch in its own transaction.
async fn writes_in_flight_when_the_switch_flips_commit_nothing(n: Notes) {
    const IN_FLIGHT: usize = 20;
    // The test itself is the last to arrive: it engages the switch, then lets them all go.
    n.traps.meet(IN_FLIGHT + 1);
    let client = std::sync::Arc::new(n.client());
    let calls: Vec<_> = (0..IN_FLIGHT)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move {
                let args = json!({"title": format!("In flight {i}"), "body": "x"});
                client.call_tool("create_note", args).await
            })
        })
        .collect();
    while n.traps.arrived.load(Ordering::SeqCst) < IN_FLIGHT {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let oncall = crate::support::cli_actor("system", "oncall");
    n.app
        .switches
        .set_global(&oncall, true, "engaged with writes in flight")
        .await
        .unwrap();
    let barrier = n.traps.rendezvous.lock().unwrap().clone().unwrap();
    barrier.wait().await;
    for call in calls {
        let call = call.await.unwrap();
        assert_eq!(call.structured()["switched_off"], true, "{}", call.text());
    }
    assert!(
        n.notes().await.is_empty(),
        "a write committed after the switch was engaged"
    );
    assert!(n.executed().await.is_empty(), "no audit row");
}
on_every_backend!(
    switch_with_writes_in_flight,
    writes_in_flight_when_the_switch_flips_commit_nothing,
    |backend| Notes::on(backend, in_flight_limits()),
    threads = 4
);

/// No concurrency slots (they would hold a connection to two calls) and room for the writes.
fn in_flight_limits() -> Limits {
    let mut limits = Limits {
        concurrency: false,
        ..Limits::default()
    };
    limits.per_connection.write = 100;
    limits.per_tenant.write = 100;
    limits
}
