//! HTTP statuses and protocol errors: methods, batches, notifications, origins, body size,
//! content types, MCP headers, versions, sessions, legacy clients and discovery.

use mcp_test_client::TestClient;
use serde_json::json;

use super::{JSON, V, headers, modern_body, post};
use crate::support::probe_tools::{client, entries, fixture};

#[tokio::test]
async fn get_and_delete_get_405() {
    let f = fixture();
    for method in [http::Method::GET, http::Method::DELETE] {
        let r = client(&f)
            .send(method.clone(), "/mcp", &headers(&[V]), bytes::Bytes::new())
            .await;
        assert_eq!(r.status, 405, "{method}");
        assert_eq!(r.header("allow"), Some("POST"));
    }
}

#[tokio::test]
async fn a_batch_gets_400_and_one_error() {
    let f = fixture();
    let batch = json!([
        modern_body("tools/list", json!({})),
        modern_body("tools/list", json!({}))
    ]);
    let r = post(&f, &[JSON, V, ("mcp-method", "tools/list")], &batch).await;
    assert_eq!(r.status, 400);
    let body = r.json();
    assert!(body.is_object(), "one error object, not an array: {body}");
    assert_eq!(body["error"]["code"], -32600);
}

#[tokio::test]
async fn a_notification_gets_202_and_no_body() {
    let f = fixture();
    let n = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let r = post(&f, &[JSON, ("mcp-protocol-version", "2025-11-25")], &n).await;
    assert_eq!(r.status, 202);
    assert!(r.body.is_empty());
}

#[tokio::test]
async fn origin_not_on_the_allowlist_gets_403_before_anything_runs() {
    let f = fixture();
    let body = modern_body(
        "tools/call",
        json!({"name": "open_action", "arguments": {}}),
    );
    let hs = [
        JSON,
        V,
        ("mcp-method", "tools/call"),
        ("mcp-name", "open_action"),
        ("x-role", "admin"),
    ];
    let mut bad = hs.to_vec();
    bad.push(("origin", "https://evil.example"));
    let r = post(&f, &bad, &body).await;
    assert_eq!(r.status, 403);
    assert!(
        entries(&f.log).is_empty(),
        "something ran for a forbidden origin: {:?}",
        entries(&f.log)
    );
    // Even a request that is otherwise malformed gets 403 first.
    let r = client(&f)
        .send(
            http::Method::GET,
            "/mcp",
            &headers(&[("origin", "https://evil.example")]),
            bytes::Bytes::new(),
        )
        .await;
    assert_eq!(r.status, 403);
    let mut good = hs.to_vec();
    good.push(("origin", "https://app.example.com"));
    let r = post(&f, &good, &body).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["result"]["isError"], false);
}

#[tokio::test]
async fn a_body_over_the_limit_gets_413() {
    let f = fixture();
    let big = modern_body(
        "tools/call",
        json!({"name": "echo_args", "arguments": {"text": "x".repeat(70 * 1024)}}),
    );
    let r = post(
        &f,
        &[
            JSON,
            V,
            ("mcp-method", "tools/call"),
            ("mcp-name", "echo_args"),
        ],
        &big,
    )
    .await;
    assert_eq!(r.status, 413);
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("exceeds")
    );
    assert!(
        entries(&f.log).is_empty(),
        "the tool ran on an oversized body"
    );
}

#[tokio::test]
async fn wrong_content_type_and_bad_json() {
    let f = fixture();
    let r = client(&f)
        .send(
            http::Method::POST,
            "/mcp",
            &headers(&[("content-type", "text/plain"), V]),
            "{}".into(),
        )
        .await;
    assert_eq!(r.status, 415);
    let r = client(&f)
        .send(
            http::Method::POST,
            "/mcp",
            &headers(&[JSON, V]),
            "{not json".into(),
        )
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.error_code(), Some(-32700));
    assert!(r.json()["id"].is_null());
    let r = client(&f)
        .send(
            http::Method::POST,
            "/other",
            &headers(&[JSON, V]),
            "{}".into(),
        )
        .await;
    assert_eq!(r.status, 404);
}

#[tokio::test]
async fn unknown_method_gets_404_and_32601() {
    let f = fixture();
    let r = client(&f).request("resources/list", json!({})).await;
    assert_eq!(r.status, 404);
    assert_eq!(r.error_code(), Some(-32601));
    // `ping` and `initialize` do not exist in 2026-07-28.
    let r = client(&f).request("ping", json!({})).await;
    assert_eq!((r.status, r.error_code()), (404, Some(-32601)));
    let r = client(&f).request("initialize", json!({})).await;
    assert_eq!((r.status, r.error_code()), (404, Some(-32601)));
    assert!(
        r.json()["error"]["data"]["supported"]
            .as_array()
            .is_some_and(|s| !s.is_empty())
    );
}

#[tokio::test]
async fn mcp_headers_must_be_present_and_match_the_body() {
    let f = fixture();
    let body = modern_body(
        "tools/call",
        json!({"name": "open_action", "arguments": {}}),
    );
    let cases: Vec<(&str, Vec<(&str, &str)>)> = vec![
        (
            "no version header",
            vec![
                JSON,
                ("mcp-method", "tools/call"),
                ("mcp-name", "open_action"),
            ],
        ),
        (
            "no method header",
            vec![JSON, V, ("mcp-name", "open_action")],
        ),
        (
            "no name header",
            vec![JSON, V, ("mcp-method", "tools/call")],
        ),
        (
            "method differs",
            vec![
                JSON,
                V,
                ("mcp-method", "tools/list"),
                ("mcp-name", "open_action"),
            ],
        ),
        (
            "name differs",
            vec![
                JSON,
                V,
                ("mcp-method", "tools/call"),
                ("mcp-name", "guarded_action"),
            ],
        ),
        (
            "bad base64",
            vec![
                JSON,
                V,
                ("mcp-method", "tools/call"),
                ("mcp-name", "=?base64?***?="),
            ],
        ),
    ];
    for (what, hs) in cases {
        let r = post(&f, &hs, &body).await;
        assert_eq!(
            (r.status, r.error_code()),
            (400, Some(-32020)),
            "{what}: {:?}",
            r.json()
        );
        // A missing header is named with the line that would be accepted.
        let message = r.json()["error"]["message"].as_str().unwrap().to_owned();
        let wanted = match what {
            "no method header" => "(Mcp-Method: tools/call)",
            "no name header" => "(Mcp-Name: open_action)",
            _ => "",
        };
        assert!(message.contains(wanted), "{what}: {message}");
    }
    // A header that differs from a body holding something long is refused without echoing it.
    let long = "x".repeat(5_000);
    let mut odd = body.clone();
    odd["params"]["name"] = json!(long);
    let hs = [
        JSON,
        V,
        ("mcp-method", "tools/call"),
        ("mcp-name", "open_action"),
    ];
    let r = post(&f, &hs, &odd).await;
    assert_eq!((r.status, r.error_code()), (400, Some(-32020)));
    assert!(
        !String::from_utf8_lossy(&r.body).contains(&long[..200]),
        "echoed: {}",
        String::from_utf8_lossy(&r.body).len()
    );
    // The body's _meta version must equal the header.
    let mut other = body.clone();
    other["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2025-11-25");
    let r = post(
        &f,
        &[
            JSON,
            V,
            ("mcp-method", "tools/call"),
            ("mcp-name", "open_action"),
        ],
        &other,
    )
    .await;
    assert_eq!((r.status, r.error_code()), (400, Some(-32020)));
    assert!(
        entries(&f.log).is_empty(),
        "a tool ran despite bad headers: {:?}",
        entries(&f.log)
    );
}

#[tokio::test]
async fn mcp_name_in_base64_form_is_decoded() {
    let f = fixture();
    let body = modern_body(
        "tools/call",
        json!({"name": "echo_args", "arguments": {"text": "hi"}}),
    );
    let encoded = mcp_test_client::encode_header(" echo_args");
    assert!(encoded.starts_with("=?base64?"));
    // The decoded value " echo_args" differs from the body, so this is a mismatch...
    let r = post(
        &f,
        &[
            JSON,
            V,
            ("mcp-method", "tools/call"),
            ("mcp-name", &encoded),
        ],
        &body,
    )
    .await;
    assert_eq!(r.error_code(), Some(-32020));
    // ...while the base64 form of the right name matches.
    let r = post(
        &f,
        &[
            JSON,
            V,
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?ZWNob19hcmdz?="),
        ],
        &body,
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.json());
}

#[tokio::test]
async fn unsupported_version_gets_400_with_the_supported_list() {
    let f = fixture();
    let body = modern_body("tools/list", json!({}));
    let r = post(
        &f,
        &[
            JSON,
            ("mcp-protocol-version", "1900-01-01"),
            ("mcp-method", "tools/list"),
        ],
        &body,
    )
    .await;
    assert_eq!((r.status, r.error_code()), (400, Some(-32022)));
    let data = &r.json()["error"]["data"];
    assert_eq!(data["requested"], "1900-01-01");
    assert_eq!(data["supported"], json!(mcp_protocol::SUPPORTED_VERSIONS));
}

#[tokio::test]
async fn missing_meta_fields_get_400_and_32602() {
    let f = fixture();
    for missing in [
        "io.modelcontextprotocol/clientCapabilities",
        "io.modelcontextprotocol/protocolVersion",
    ] {
        let mut body = modern_body("tools/list", json!({}));
        body["params"]["_meta"]
            .as_object_mut()
            .unwrap()
            .remove(missing);
        let hs = [JSON, V, ("mcp-method", "tools/list")];
        let r = post(&f, &hs, &body).await;
        assert_eq!(
            (r.status, r.error_code()),
            (400, Some(-32602)),
            "{missing}: {:?}",
            r.json()
        );
        assert!(
            r.json()["error"]["message"]
                .as_str()
                .unwrap()
                .contains(missing)
        );
    }
}

/// A request with no `_meta` at all is told every field it lacks at once, and the `_meta` that
/// would be accepted (which, sent back as given, is).
#[tokio::test]
async fn a_request_without_meta_is_told_every_missing_field_and_what_works() {
    let f = fixture();
    let mut body = modern_body("tools/list", json!({}));
    body["params"].as_object_mut().unwrap().remove("_meta");
    let hs = [JSON, V, ("mcp-method", "tools/list")];
    let r = post(&f, &hs, &body).await;
    assert_eq!((r.status, r.error_code()), (400, Some(-32602)));
    let error = &r.json()["error"];
    let message = error["message"].as_str().unwrap();
    for field in [
        "io.modelcontextprotocol/protocolVersion",
        "io.modelcontextprotocol/clientCapabilities",
    ] {
        assert!(message.contains(field), "{message}");
        assert!(
            error["data"]["missing"]
                .as_array()
                .unwrap()
                .contains(&json!(field))
        );
    }
    body["params"]["_meta"] = error["data"]["_meta"].clone();
    let r = post(&f, &hs, &body).await;
    assert_eq!(r.status, 200, "{:?}", r.json());
    assert!(r.json()["result"]["tools"].is_array(), "{:?}", r.json());
}

#[tokio::test]
async fn sessions_are_ignored_and_never_minted() {
    let f = fixture();
    let c = client(&f)
        .with_header("mcp-session-id", "abc123")
        .with_header("last-event-id", "42");
    let r = c.request("tools/list", json!({})).await;
    assert_eq!(r.status, 200);
    assert!(r.header("mcp-session-id").is_none());
    let legacy = TestClient::in_process(f.service.clone()).legacy("2025-06-18");
    let r = legacy
        .request("initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}))
        .await;
    assert_eq!(r.status, 200);
    assert!(
        r.header("mcp-session-id").is_none(),
        "initialize minted a session"
    );
    let result = &r.json()["result"];
    assert_eq!(result["protocolVersion"], "2025-06-18");
    assert_eq!(result["capabilities"]["tools"]["listChanged"], false);
    assert_eq!(result["serverInfo"]["name"], "gatehouse");
}

#[tokio::test]
async fn legacy_clients_get_ping_list_and_call_without_a_session() {
    let f = fixture();
    for version in ["2025-06-18", "2025-11-25"] {
        let c = TestClient::in_process(f.service.clone()).legacy(version);
        let r = c.request("ping", json!({})).await;
        assert_eq!(r.json()["result"], json!({}), "{version}");
        let list = c.list_tools().await;
        assert!(list["tools"].as_array().unwrap().len() >= 5);
        assert!(list.get("resultType").is_none());
        let call = c.call_tool("echo_args", json!({"text": "hello"})).await;
        assert!(!call.is_error(), "{version}: {}", call.result);
    }
    // A legacy client with no version header at all is served too.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let r = post(&f, &[JSON], &body).await;
    assert_eq!(r.status, 200);
}

/// ADR 21: 2025-03-26 is served like the other legacy revisions; a request without the version
/// header is taken as 2025-03-26; a batch, which 2025-03-26 allowed, is still refused clearly.
#[tokio::test]
async fn clients_of_2025_03_26_are_served_and_batches_refused() {
    let f = fixture();
    let c = TestClient::in_process(f.service.clone()).legacy("2025-03-26");
    let r = c
        .request("initialize", json!({"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.json());
    assert_eq!(r.json()["result"]["protocolVersion"], "2025-03-26");
    assert!(r.header("mcp-session-id").is_none());
    let list = c.list_tools().await;
    assert!(list["tools"].as_array().unwrap().len() >= 5);
    let call = c.call_tool("echo_args", json!({"text": "hello"})).await;
    assert!(!call.is_error(), "{}", call.result);
    // Without any version header: the legacy era, as 2025-03-26.
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "echo_args", "arguments": {"text": "hi"}}});
    let r = post(&f, &[JSON], &call).await;
    assert_eq!(r.status, 200, "{:?}", r.json());
    assert_eq!(r.json()["result"]["isError"], false, "{:?}", r.json());
    // A modern request cannot pass for a legacy one by dropping the header.
    let r = post(&f, &[JSON], &modern_body("tools/list", json!({}))).await;
    assert_eq!(r.status, 400);
    // A batch, which 2025-03-26 allowed: one clear error, nothing run.
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    ]);
    let r = post(&f, &[JSON, ("mcp-protocol-version", "2025-03-26")], &batch).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["code"], -32600);
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("batches are not supported")),
        "{:?}",
        r.json()
    );
}

#[tokio::test]
async fn discover_and_list_carry_cache_hints_and_server_info() {
    let f = fixture();
    let r = client(&f).request("server/discover", json!({})).await;
    let result = &r.json()["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        result["supportedVersions"],
        json!(mcp_protocol::SUPPORTED_VERSIONS)
    );
    assert!(result["ttlMs"].as_u64().is_some());
    assert_eq!(result["cacheScope"], "public");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "gatehouse"
    );
    let list = client(&f).list_tools().await;
    assert_eq!(list["resultType"], "complete");
    assert_eq!(
        list["cacheScope"], "private",
        "the tool list depends on who asks"
    );
    assert!(list["ttlMs"].as_u64().is_some());
    assert!(list.get("nextCursor").is_none(), "one page");
    assert_eq!(
        list["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "gatehouse"
    );
    let r = client(&f)
        .request("tools/list", json!({"cursor": "abc"}))
        .await;
    assert_eq!(r.error_code(), Some(-32602));
}

#[tokio::test]
async fn unknown_tool_is_a_protocol_error() {
    let f = fixture();
    let r = client(&f)
        .request(
            "tools/call",
            json!({"name": "no_such_tool", "arguments": {}}),
        )
        .await;
    assert_eq!(r.error_code(), Some(-32602));
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no_such_tool")
    );
}

/// The `_meta` of a 2026-07-28 request, as raw JSON text.
const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

/// Sends `body` as it is (not re-serialized, so duplicates and depth reach the server).
async fn post_raw(
    f: &crate::support::probe_tools::Fixture,
    body: String,
) -> mcp_test_client::RawResponse {
    client(f)
        .send(
            http::Method::POST,
            "/mcp",
            &headers(&[
                JSON,
                V,
                ("mcp-method", "tools/call"),
                ("mcp-name", "echo_args"),
            ]),
            body.into(),
        )
        .await
}

#[tokio::test]
async fn a_key_twice_in_one_object_gets_400_before_anything_runs() {
    let f = fixture();
    let call = |args: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo_args","arguments":{args},{META}}}}}"#
        )
    };
    let twice_at_top = format!(
        r#"{{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{{"name":"echo_args","arguments":{{}},{META}}}}}"#
    );
    for body in [
        twice_at_top,
        call(r#"{"text":"a","text":"b"}"#),
        call(r#"{"text":"a","\u0074ext":"b"}"#),
    ] {
        let r = post_raw(&f, body.clone()).await;
        assert_eq!(r.status, 400, "{body}");
        assert_eq!(r.error_code(), Some(-32700), "{body}");
        let message = r.json()["error"]["message"].as_str().unwrap().to_owned();
        assert!(message.contains("appears twice"), "{message}");
    }
    assert!(
        entries(&f.log).is_empty(),
        "a tool ran: {:?}",
        entries(&f.log)
    );
    let r = post_raw(&f, call(r#"{"text":"a"}"#)).await;
    assert_eq!(r.status, 200, "the same call without the duplicate runs");
}

#[tokio::test]
async fn very_deep_or_very_wide_json_is_refused_before_anything_runs() {
    let f = fixture();
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo_args","arguments":{{"text":{}1{}}},{META}}}}}"#,
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let r = post_raw(&f, deep).await;
    assert_eq!(r.status, 400, "10,000 levels deep");
    assert_eq!(r.error_code(), Some(-32700));
    let wide = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo_args","arguments":{{"text":[{}0]}},{META}}}}}"#,
        "0,".repeat(1_000_000)
    );
    let r = post_raw(&f, wide).await;
    assert_eq!(r.status, 413, "a million elements");
    assert!(
        entries(&f.log).is_empty(),
        "a tool ran: {:?}",
        entries(&f.log)
    );
}

#[tokio::test]
async fn origin_null_and_look_alikes_get_403() {
    let f = fixture();
    let body = modern_body("tools/call", json!({"name": "echo_args", "arguments": {}}));
    // The allowed origin is https://app.example.com (as browsers serialise it).
    for origin in [
        "null",
        "https://app.example.com.evil.io",
        "https://evil.io/https://app.example.com",
        "http://app.example.com",
        "https://app.example.com:8443",
        "https://app.example.com.",
        "HTTPS://APP.EXAMPLE.COM",
        "https://app.example.com/",
        "https://xapp.example.com",
        "",
    ] {
        let hs = [
            JSON,
            V,
            ("mcp-method", "tools/call"),
            ("mcp-name", "echo_args"),
            ("origin", origin),
        ];
        let r = post(&f, &hs, &body).await;
        assert_eq!(r.status, 403, "Origin: {origin:?}");
    }
    assert!(
        entries(&f.log).is_empty(),
        "a tool ran: {:?}",
        entries(&f.log)
    );
}

#[tokio::test]
async fn a_preflight_changes_nothing_and_allows_no_other_site() {
    let f = fixture();
    let preflight = |origin: &'static str| {
        headers(&[
            ("origin", origin),
            ("access-control-request-method", "POST"),
            (
                "access-control-request-headers",
                "content-type, authorization",
            ),
        ])
    };
    let r = client(&f)
        .send(
            http::Method::OPTIONS,
            "/mcp",
            &preflight("https://evil.example"),
            bytes::Bytes::new(),
        )
        .await;
    assert_eq!(r.status, 403);
    assert_eq!(r.header("access-control-allow-origin"), None);
    let r = client(&f)
        .send(
            http::Method::OPTIONS,
            "/mcp",
            &preflight("https://app.example.com"),
            bytes::Bytes::new(),
        )
        .await;
    assert_ne!(r.header("access-control-allow-origin"), Some("*"));
    assert!(r.status >= 200 && r.status < 500, "{}", r.status);
    assert!(
        entries(&f.log).is_empty(),
        "a tool ran: {:?}",
        entries(&f.log)
    );
    // The real POST from the other site is refused.
    let body = modern_body("tools/call", json!({"name": "echo_args", "arguments": {}}));
    let hs = [
        JSON,
        V,
        ("mcp-method", "tools/call"),
        ("mcp-name", "echo_args"),
        ("origin", "https://evil.example"),
    ];
    assert_eq!(post(&f, &hs, &body).await.status, 403);
}

/// Review of 2026-12-05: an MCP header sent twice was read by its first copy (a gateway that
/// reads the other would route or check another call); a legacy version header let a body
/// of 2026-07-28 through unchecked. Both are 400 / -32020, and nothing runs.
#[tokio::test]
async fn a_header_sent_twice_or_a_version_two_ways_is_refused() {
    let f = fixture();
    let body = modern_body(
        "tools/call",
        json!({"name": "open_action", "arguments": {}}),
    );
    let call = [("mcp-method", "tools/call"), ("mcp-name", "open_action")];
    let cases: Vec<(&str, Vec<(&str, &str)>)> = vec![
        (
            "name twice",
            vec![JSON, V, call[0], call[1], ("mcp-name", "guarded_action")],
        ),
        (
            "name twice, equal",
            vec![JSON, V, call[0], call[1], call[1]],
        ),
        (
            "method twice",
            vec![JSON, V, call[0], ("mcp-method", "tools/list"), call[1]],
        ),
        (
            "version twice",
            vec![
                JSON,
                V,
                ("mcp-protocol-version", "2025-11-25"),
                call[0],
                call[1],
            ],
        ),
        (
            "legacy header, 2026-07-28 body",
            vec![
                JSON,
                ("mcp-protocol-version", "2025-06-18"),
                call[0],
                call[1],
            ],
        ),
    ];
    for (what, hs) in cases {
        let r = post(&f, &hs, &body).await;
        assert_eq!(
            (r.status, r.error_code()),
            (400, Some(-32020)),
            "{what}: {:?}",
            r.json()
        );
    }
    assert!(entries(&f.log).is_empty(), "ran: {:?}", entries(&f.log));
}

/// Review of 2026-12-05: an id above 2^63 is an integer (echoed as sent); an unknown log level
/// and a progress token that is neither text nor an integer are invalid params (-32602), as the
/// protocol lists them, and nothing runs.
#[tokio::test]
async fn ids_log_levels_and_progress_tokens_are_read_as_the_protocol_says() {
    let f = fixture();
    let hs = [JSON, V, ("mcp-method", "tools/list")];
    let mut body = modern_body("tools/list", json!({}));
    body["id"] = json!(18_446_744_073_709_551_615_u64);
    let r = post(&f, &hs, &body).await;
    assert_eq!(r.status, 200, "{:?}", r.json());
    assert_eq!(r.json()["id"], json!(18_446_744_073_709_551_615_u64));
    let hs = [
        JSON,
        V,
        ("mcp-method", "tools/call"),
        ("mcp-name", "open_action"),
    ];
    let bad: [(&str, serde_json::Value); 4] = [
        ("io.modelcontextprotocol/logLevel", json!("loud")),
        ("io.modelcontextprotocol/logLevel", json!(3)),
        ("progressToken", json!({"a": 1})),
        ("progressToken", json!(1.5)),
    ];
    for (field, value) in bad {
        let mut body = modern_body(
            "tools/call",
            json!({"name": "open_action", "arguments": {}}),
        );
        body["params"]["_meta"][field] = value.clone();
        let r = post(&f, &hs, &body).await;
        assert_eq!(
            (r.status, r.error_code()),
            (400, Some(-32602)),
            "{field} {value}: {:?}",
            r.json()
        );
    }
    assert!(entries(&f.log).is_empty(), "ran: {:?}", entries(&f.log));
    let mut fine = modern_body(
        "tools/call",
        json!({"name": "open_action", "arguments": {}}),
    );
    fine["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("warning");
    fine["params"]["_meta"]["progressToken"] = json!("p-1");
    let r = post(&f, &hs, &fine).await;
    assert_eq!(r.status, 200, "{:?}", r.json());
}
