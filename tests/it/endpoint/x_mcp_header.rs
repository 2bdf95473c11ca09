//! Parameters marked `x-mcp-header` and their `Mcp-Param-*` headers.

use mcp_http::{HttpConfig, McpService};
use mcp_pipeline::{Registry, Server, ToolSpec};
use mcp_test_client::TestClient;
use serde_json::json;

use crate::support::probe_tools::RegionTool;

#[tokio::test]
async fn parameters_marked_x_mcp_header_must_match_their_headers() {
    let mut registry = Registry::new();
    registry.register(ToolSpec::new(RegionTool)).unwrap();
    let service = McpService::new(
        Server::new(crate::support::memory_config(), registry),
        HttpConfig::default(),
    );
    let c = |headers: &[(&str, &str)]| {
        let mut client = TestClient::in_process(service.clone());
        for (k, v) in headers {
            client = client.with_header(k, v);
        }
        client
    };
    let args = json!({"region": "eu-west-1", "count": 3});
    let ok = c(&[("mcp-param-region", "eu-west-1"), ("mcp-param-count", "3")])
        .call_tool("get_region", args.clone())
        .await;
    assert!(!ok.is_error());
    let encoded = c(&[
        ("mcp-param-region", "=?base64?ZXUtd2VzdC0x?="),
        ("mcp-param-count", "03"),
    ])
    .call_tool("get_region", args.clone())
    .await;
    assert!(
        !encoded.is_error(),
        "base64 form decoded, integers compared as numbers"
    );
    for (what, headers) in [
        ("missing header", vec![("mcp-param-count", "3")]),
        (
            "different value",
            vec![("mcp-param-region", "us-east-1"), ("mcp-param-count", "3")],
        ),
        (
            "bad base64",
            vec![
                ("mcp-param-region", "=?base64?%%%?="),
                ("mcp-param-count", "3"),
            ],
        ),
        (
            "different number",
            vec![("mcp-param-region", "eu-west-1"), ("mcp-param-count", "4")],
        ),
    ] {
        let r = c(&headers)
            .request(
                "tools/call",
                json!({"name": "get_region", "arguments": args}),
            )
            .await;
        assert_eq!((r.status, r.error_code()), (400, Some(-32020)), "{what}");
    }
    let r = c(&[("mcp-param-region", "eu-west-1")])
        .request("tools/call", json!({"name": "get_region", "arguments": {}}))
        .await;
    assert_eq!(
        (r.status, r.error_code()),
        (400, Some(-32020)),
        "a header without its argument"
    );
    let schema = &c(&[]).list_tools().await["tools"][0]["inputSchema"]["properties"]["region"];
    assert_eq!(schema["x-mcp-header"], "Region");
}
