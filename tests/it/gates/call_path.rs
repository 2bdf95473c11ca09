//! The call path's gates under concurrency and odd input: each test drives one defect found by
//! trying the server as an outside client would, through the real HTTP handler.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use mcp_pipeline::{ClassLimits, Limits};
use serde_json::json;

use super::new_note;
use crate::support::notes::Notes;
use crate::support::on_every_backend;

/// Two writes racing with one idempotency key and different arguments: one is written, the
/// other is told the key was used for other arguments; never the first call's result.
async fn a_key_raced_with_other_arguments_is_refused_not_replayed(n: Notes) {
    let client = Arc::new(n.client());
    n.traps.meet(2);
    let call = |title: &'static str| {
        let client = client.clone();
        tokio::spawn(async move {
            client
                .call_tool(
                    "create_note",
                    json!({"title": title, "body": "b", "idempotency_key": "same-key"}),
                )
                .await
        })
    };
    let (a, b) = (call("First"), call("Second"));
    let results = [a.await.unwrap(), b.await.unwrap()];
    let written: Vec<_> = results.iter().filter(|r| !r.is_error()).collect();
    let refused: Vec<_> = results.iter().filter(|r| r.is_error()).collect();
    assert_eq!(
        written.len(),
        1,
        "{:?}",
        results.iter().map(|r| r.text()).collect::<Vec<_>>()
    );
    assert_eq!(refused.len(), 1);
    assert!(written[0].structured().get("replayed").is_none());
    assert_eq!(
        refused[0].structured()["code"],
        "conflict",
        "{}",
        refused[0].text()
    );
    assert!(
        refused[0].text().contains("idempotency_key"),
        "{}",
        refused[0].text()
    );
    assert_eq!(refused[0].structured()["differs_in"], json!(["title"]));
    assert_eq!(n.notes().await.len(), 1, "one note, the winner's");
    assert_eq!(n.executed().await.len(), 1, "one audit row");
}
on_every_backend!(
    idempotency_key_race,
    a_key_raced_with_other_arguments_is_refused_not_replayed,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);

/// A confirm token naming one record twice, a hundred records, or nothing readable is a tool
/// error; it never fails authentication. A forged token locator is 401.
async fn a_crafted_confirm_token_is_a_tool_error(n: Notes) {
    let c = n.client();
    let note = new_note(&c, "Gate", "4711").await;
    let id = "cfm_AAAAAAAAAAAAAAAAAAAAAAAA";
    let many = std::iter::repeat_n(note.as_str(), 120)
        .collect::<Vec<_>>()
        .join(".");
    for token in [
        format!("{id}.{note}.{note}"),
        format!("{id}.{many}"),
        format!("{id}.{}", "x".repeat(5000)),
        "cfm_".repeat(3000),
    ] {
        for tool in ["confirm_action", "reject_action"] {
            let mut args = json!({"confirm_token": token});
            if tool == "confirm_action" {
                args["confirm_summary"] = json!("s");
            }
            let call = c.call_tool(tool, args).await;
            assert!(call.is_error(), "{tool}: {}", call.text());
            // A token of the wrong shape names nothing; one past the argument's length limit
            // is refused before it is read. Either way a tool error, short, never a 503.
            let code = call.structured()["code"].as_str().unwrap_or_default();
            assert!(
                ["not_found", "validation"].contains(&code),
                "{}",
                call.text()
            );
            assert!(
                call.result.to_string().len() < 2_000,
                "{tool}: the token was echoed"
            );
        }
    }
    assert_eq!(n.notes().await.len(), 1);
}
on_every_backend!(
    crafted_confirm_token,
    a_crafted_confirm_token_is_a_tool_error,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);

/// `reject_action` and `confirm_action` spend the write bucket and are braked like any tool.
async fn confirmation_tools_pass_the_gates(n: Notes) {
    let c = n.client();
    let unknown = "cfm_BBBBBBBBBBBBBBBBBBBBBBBB";
    let mut codes = Vec::new();
    for i in 0..5 {
        let token = format!("cfm_{i}BBBBBBBBBBBBBBBBBBBBBBB");
        let call = c
            .call_tool("reject_action", json!({"confirm_token": token}))
            .await;
        codes.push(
            call.structured()["code"]
                .as_str()
                .unwrap_or("ok")
                .to_owned(),
        );
    }
    assert_eq!(
        codes,
        [
            "not_found",
            "not_found",
            "not_found",
            "rate_limited",
            "rate_limited"
        ],
        "a write bucket of 3 admits three rejections"
    );
    let n2 = c
        .call_tool(
            "confirm_action",
            json!({"confirm_token": unknown, "confirm_summary": "s"}),
        )
        .await;
    assert_eq!(n2.structured()["code"], "rate_limited", "{}", n2.text());
}
on_every_backend!(
    confirmation_rate_limited,
    confirmation_tools_pass_the_gates,
    |backend| Notes::on(
        backend,
        Limits {
            per_connection: ClassLimits {
                write: 3,
                ..Limits::default().per_connection
            },
            ..Limits::default()
        }
    ),
    threads = 4
);

async fn a_failing_confirmation_is_braked(n: Notes) {
    let c = n.client();
    let args = json!({"confirm_token": "cfm_CCCCCCCCCCCCCCCCCCCCCCCC", "confirm_summary": "s"});
    for _ in 0..2 {
        let call = c.call_tool("confirm_action", args.clone()).await;
        assert_eq!(call.structured()["code"], "not_found", "{}", call.text());
    }
    let third = c.call_tool("confirm_action", args).await;
    assert_eq!(third.structured()["loop_brake"], true, "{}", third.text());
}
on_every_backend!(
    confirmation_braked,
    a_failing_confirmation_is_braked,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);

/// An interceptor that answers without calling the tool: nothing is committed, no replay
/// record, no audit row; the same call later runs the tool.
async fn an_answer_without_the_tool_commits_nothing(n: Notes) {
    let c = n.client();
    let args = json!({"title": "Gate", "body": "4711"});
    n.traps.answer_without_tool.store(true, Ordering::SeqCst);
    let short = c.call_tool("create_note", args.clone()).await;
    assert!(!short.is_error(), "{}", short.text());
    assert!(n.audit_actions().await.is_empty(), "no audit row");
    n.traps.answer_without_tool.store(false, Ordering::SeqCst);
    let real = c.call_tool("create_note", args).await;
    assert!(!real.is_error(), "{}", real.text());
    assert!(
        real.structured().get("replayed").is_none(),
        "no replay record was left"
    );
    assert_eq!(n.notes().await.len(), 1);
}
on_every_backend!(
    interceptor_answers,
    an_answer_without_the_tool_commits_nothing,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);

/// "In a row": a success, or another call in between, starts the count again.
async fn the_brake_counts_failures_in_a_row(n: Notes) {
    let c = n.client();
    let missing = json!({"note": "not_DoesNotExist0000000"});
    let other = json!({"note": "not_SomethingElse00000"});
    let code = |call: mcp_test_client::ToolCall| {
        if call.structured()["loop_brake"] == true {
            "braked".to_owned()
        } else {
            call.structured()["code"]
                .as_str()
                .unwrap_or("ok")
                .to_owned()
        }
    };
    let mut seen = Vec::new();
    for args in [&missing, &missing, &other, &missing, &missing] {
        seen.push(code(c.call_tool("get_note", args.clone()).await));
    }
    assert_eq!(
        seen,
        [
            "not_found",
            "not_found",
            "not_found",
            "not_found",
            "not_found"
        ]
    );
    new_note(&c, "A success", "between").await;
    seen.clear();
    for args in [&missing, &missing, &missing] {
        seen.push(code(c.call_tool("get_note", args.clone()).await));
    }
    assert_eq!(
        seen,
        ["not_found", "not_found", "braked"],
        "a success reset the count"
    );
}
on_every_backend!(
    brake_in_a_row,
    the_brake_counts_failures_in_a_row,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);

/// A panic in a guard or an interceptor is the generic error with a request id; nothing
/// is committed.
async fn a_panicking_decorator_is_an_internal_error(n: Notes) {
    let c = n.client();
    for trap in [&n.traps.guard_panics, &n.traps.interceptor_panics] {
        trap.store(true, Ordering::SeqCst);
        let call = c
            .call_tool("create_note", json!({"title": "Gate", "body": "4711"}))
            .await;
        trap.store(false, Ordering::SeqCst);
        assert!(call.is_error());
        assert_eq!(call.structured()["code"], "internal", "{}", call.text());
        assert!(
            call.structured()["request_id"]
                .as_str()
                .unwrap()
                .starts_with("req_"),
            "{}",
            call.text()
        );
    }
    assert!(n.notes().await.is_empty());
    assert!(n.audit_actions().await.is_empty());
}
on_every_backend!(
    panicking_decorators,
    a_panicking_decorator_is_an_internal_error,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);

/// A token whose locator is forged (another tenant, a creator or connection that does not
/// match, a tenant too long for a key) is 401, whatever the call's arguments name.
async fn a_forged_locator_is_401(n: Notes) {
    use base64::Engine as _;
    let forge = |tenant: &str, creator: &str, connection: &str| {
        let locator = format!("{tenant}\u{1f}{creator}\u{1f}{connection}");
        let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(locator);
        format!("ghm_{encoded}.{}", "A".repeat(43))
    };
    let long = "t".repeat(3000);
    for token in [
        forge("acme", "dan", &n.connection),
        forge("globex", "dan", &n.connection),
        forge(&long, "dan", &n.connection),
        forge("acme#pending", "dan", "x"),
    ] {
        let client = mcp_test_client::TestClient::in_process(n.app.http.clone())
            .with_header("authorization", &format!("Bearer {token}"));
        for (method, params) in [
            ("tools/list", json!({})),
            (
                "tools/call",
                json!({"name": "confirm_action", "arguments": {
                    "confirm_token": "cfm_DDDDDDDDDDDDDDDDDDDDDDDD", "confirm_summary": "s"}}),
            ),
            (
                "tools/call",
                json!({"name": "get_note", "arguments": {"note": "not_DoesNotExist0000000"}}),
            ),
        ] {
            let response = client.request(method, params).await;
            assert_eq!(response.status, 401, "{method}: {}", response.json());
        }
    }
}
on_every_backend!(
    forged_locator,
    a_forged_locator_is_401,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);

/// A client that waits for each answer is never refused on the instance that served its
/// previous call, even when that call's slot release (after the answer) has not run: the next
/// call waits for it. On another instance, which cannot know of it, the wait is bounded and
/// ends in a retryable refusal; once the release lands the call is admitted (ADR 14).
async fn a_sequential_client_is_not_refused_by_its_own_release(n: Notes) {
    let c = n.client();
    let note = new_note(&c, "Gate", "4711").await;
    n.held.hold.store(true, Ordering::SeqCst);
    for i in 0..10 {
        let read = c.call_tool("get_note", json!({"note": note})).await;
        assert!(!read.is_error(), "read {i}: {}", read.text());
    }
    // The last read's release is still held: another instance finds the read slot taken.
    let other = n.second_instance();
    let refused = other.call_tool("get_note", json!({"note": note})).await;
    assert_eq!(
        refused.structured()["code"],
        "rate_limited",
        "{}",
        refused.text()
    );
    assert_eq!(refused.structured()["concurrency"], true);
    assert_eq!(refused.structured()["retryable"], true);
    // The slot kept for writes is free meanwhile.
    let write = other
        .call_tool("create_note", json!({"title": "Other", "body": "instance"}))
        .await;
    assert!(!write.is_error(), "{}", write.text());
    n.held.release_all().await;
    let admitted = other.call_tool("get_note", json!({"note": note})).await;
    assert!(!admitted.is_error(), "{}", admitted.text());
}
on_every_backend!(
    sequential_client,
    a_sequential_client_is_not_refused_by_its_own_release,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);

/// The log line of an approval on the product's page times the approval: a body that takes
/// three seconds of the server's clock is logged as taking them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_log_line_times_the_approval() {
    let n = Notes::on(crate::support::store::Backend::Sqlite, Limits::default())
        .await
        .unwrap();
    let c = n.client();
    let note = new_note(&c, "Invoice", "42").await;
    let preview = c.call_tool("charge_note", json!({"note": note})).await;
    let token = preview.structured()["confirm_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let caller = mcp_pipeline::Caller {
        tenant: mcp_pipeline::TenantId::new("acme"),
        connection: mcp_pipeline::ConnectionId::new(n.connection.clone()),
        creator: mcp_pipeline::MemberId::new("dan"),
        client_name: "product page".into(),
        rights: crate::support::rights(&[booking::rights::CUSTOMERS_NOTIFY]),
        toolset: mcp_pipeline::Toolset::Full,
        product_approval: mcp_pipeline::ProductApproval::NONE,
    };
    n.traps.charge_takes_seconds.store(3, Ordering::SeqCst);
    let logged = crate::support::LogCapture::default();
    let result = {
        let _guard = logged.install();
        mcp_pipeline::Approvals::approve(
            n.app.server.as_ref(),
            &token,
            caller,
            &store::MemberId::new("dan"),
        )
        .await
    };
    assert!(!result.is_error(), "{}", result.structured);
    let line = logged
        .lines()
        .into_iter()
        .find(|l| l.contains("tool call") && l.contains("tool=\"approve\""))
        .expect("the approval's log line");
    let ms: f64 = line
        .split("duration_ms=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no duration in {line}"));
    assert!(
        ms >= 3000.0,
        "the approval took 3 s of the clock, logged {ms} ms: {line}"
    );
}
