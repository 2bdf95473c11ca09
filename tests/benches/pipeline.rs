//! Pipeline overhead: the time of one MCP request through the real application (`app::build`
//! with every gate on: authentication, switches, visibility, argument normalization, replay,
//! loop brake, rate buckets, concurrency slots, the commit with its audit row) on `MemoryStore`,
//! so that the store's own latency is left out. Each iteration hands one raw HTTP request to the
//! in-process HTTP service (`McpService::handle`), exactly as `gatehouse serve` does after
//! reading it from the socket, and collects the whole response body; no network, no client-side
//! JSON parsing (a cheap check on status and body stops the run on an error).
//!
//!   cargo bench -p tests --bench pipeline            (add `-- --quick` for a short run)
//!
//! Rate limits are raised (`app::bench::scaled_limits`, numbers only) so that the buckets count
//! every call but never refuse one; silent writes carry a new email each time, so replay
//! protection never answers them from a record. Requests speak MCP 2026-07-28 (`_meta` and the
//! `Mcp-Method`/`Mcp-Name` headers), as built by `mcp_test_client::TestClient::build`.

use std::cell::Cell;
use std::sync::Arc;

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use http_body_util::{BodyExt as _, Full};
use mcp_http::McpService;
use mcp_test_client::TestClient;
use serde_json::{Value, json};

struct Bench {
    rt: tokio::runtime::Runtime,
    service: McpService,
    client: TestClient,
    customer: String,
}

impl Bench {
    /// The headers and body of one request.
    fn request(&self, method: &str, params: Value) -> (Vec<(String, String)>, Bytes) {
        let (body, headers) = self.client.build(method, params);
        (headers, Bytes::from(body.to_string()))
    }

    /// Sends one request and returns the response body; panics on anything but a success.
    async fn send(&self, headers: &[(String, String)], body: Bytes) -> Bytes {
        let mut request = http::Request::builder().method("POST").uri("/mcp");
        for (k, v) in headers {
            request = request.header(k, v);
        }
        let request = request.body(Full::new(body)).expect("request");
        let response = self.service.handle(request).await;
        let status = response.status();
        let body = match response.into_body().collect().await {
            Ok(c) => c.to_bytes(),
            Err(never) => match never {},
        };
        assert!(
            status == 200 && !contains(&body, b"\"isError\":true"),
            "{status}: {}",
            String::from_utf8_lossy(&body)
        );
        body
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn setup() -> Bench {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (service, client, customer) = rt.block_on(async {
        let store: Arc<dyn store::Store> = Arc::new(store::MemoryStore::new());
        let settings = app::Settings {
            backend: "memory".into(),
            limits: app::bench::scaled_limits(mcp_pipeline::Limits::default(), 1_000_000),
            ..app::Settings::default()
        };
        let app = app::build(&settings, store, booking_product::Booking::shared()).expect("app");
        let seeded = app::demo::seed_if_empty(&app, chrono::Utc::now()).await;
        let Ok(app::demo::Seeded::Now(demo)) = seeded else {
            panic!("an empty store is seeded: {seeded:?}")
        };
        let owner = demo
            .iter()
            .find(|c| c.tenant == "acme" && c.role == "owner" && c.toolset == "full")
            .expect("acme's owner has a full connection");
        let client = TestClient::in_process(app.http.clone())
            .with_header("authorization", &format!("Bearer {}", owner.token));
        // The first call of a connection in an hour records when it was last used; make it
        // here so that every measured call is an ordinary one.
        client.list_tools().await;
        let found = client
            .call_tool("find_customers", json!({"query": "a"}))
            .await;
        let customer = found.structured()["customers"][0]["customer"]
            .as_str()
            .expect("a demo customer")
            .to_owned();
        (app.http.clone(), client, customer)
    });
    Bench {
        rt,
        service,
        client,
        customer,
    }
}

fn pipeline(c: &mut Criterion) {
    let b = setup();
    let (headers, body) = b.request("tools/list", json!({}));
    let listed = b.rt.block_on(b.send(&headers, body.clone()));
    let tools = serde_json::from_slice::<Value>(&listed).expect("json")["result"]["tools"]
        .as_array()
        .map_or(0, Vec::len);
    eprintln!(
        "tools/list (full toolset, owner): {tools} tools, {} bytes",
        listed.len()
    );

    let mut group = c.benchmark_group("pipeline");
    group.bench_function("tools/list (full toolset)", |bench| {
        bench.iter(|| b.rt.block_on(b.send(&headers, body.clone())));
    });
    let (h, body) = b.request(
        "tools/call",
        json!({"name": "get_server_status", "arguments": {}}),
    );
    group.bench_function("tools/call read get_server_status", |bench| {
        bench.iter(|| b.rt.block_on(b.send(&h, body.clone())));
    });
    let (h, body) = b.request(
        "tools/call",
        json!({"name": "get_customer", "arguments": {"customer": b.customer}}),
    );
    group.bench_function("tools/call read get_customer", |bench| {
        bench.iter(|| b.rt.block_on(b.send(&h, body.clone())));
    });
    // A new email (and name) on every call; building the body is part of the measured time
    // (about a microsecond).
    let n = Cell::new(0_u64);
    group.bench_function("tools/call silent write create_customer", |bench| {
        bench.iter(|| {
            let i = n.get();
            n.set(i + 1);
            let (h, body) = b.request(
                "tools/call",
                json!({"name": "create_customer", "arguments": {"name": format!("Bench Customer {i}"), "email": format!("bench.{i}@example.com")}}),
            );
            b.rt.block_on(b.send(&h, body))
        });
    });
    group.finish();
}

criterion_group!(benches, pipeline);
criterion_main!(benches);
