//! Integers beyond 64 bits in a valid body (issue 46): the JSON is valid, so the answer is not
//! a parse error. Inside a call's arguments it is a `validation` tool error naming the field;
//! anywhere else -32602 with the request's id. Either way nothing runs and nothing changes.

use serde_json::{Value, json};

use crate::booking_tools::{draft, seeded_customer, seeded_technician, setup};
use crate::support::on_every_backend;
use crate::world::World;

/// Stands in the built body for the number written beyond 64 bits.
const MARK: &str = "424242424242";
const BEYOND: &str = "1180591620717411303424";

/// Sends `tools/call` of `tool` with `arguments` as raw text, `MARK` replaced by `BEYOND`
/// (`also` rewrites the text further).
async fn call_beyond(
    c: &mcp_test_client::TestClient,
    tool: &str,
    arguments: Value,
    also: impl Fn(String) -> String,
) -> (Value, mcp_test_client::RawResponse) {
    let (body, headers) = c.build("tools/call", json!({"name": tool, "arguments": arguments}));
    let text = also(body.to_string()).replace(MARK, BEYOND);
    let r = c
        .send(http::Method::POST, "/mcp", &headers, text.into())
        .await;
    (body, r)
}

async fn bookings(c: &mcp_test_client::TestClient) -> usize {
    let found = c.call_tool("find_bookings", json!({"limit": 50})).await;
    found.structured()["bookings"]
        .as_array()
        .map_or(0, Vec::len)
}

async fn an_integer_beyond_64_bits_is_answered_with_its_id_and_changes_nothing(world: World) {
    let (c, _) = setup(&world).await;
    let ada = seeded_customer(&world, "acme", "Ada Lovelace", "ada@example.com").await;
    let tom = seeded_technician(&world, "acme", "Tom Weber", "Europe/Berlin").await;
    let mut args = draft(&ada, &tom, "2055-06-07 09:00");
    args["duration_minutes"] = json!(424_242_424_242_i64);

    // In the arguments: a tool error naming the field, with the request's id.
    let (sent, r) = call_beyond(&c, "create_booking", args.clone(), |t| t).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let answer = r.json();
    assert_eq!(answer["id"], sent["id"], "{answer}");
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let error = &answer["result"]["structuredContent"];
    assert_eq!(error["code"], "validation", "{answer}");
    assert_eq!(error["field"], "duration_minutes", "{answer}");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(BEYOND) && message.contains("64 bits"),
        "{message}"
    );

    // Elsewhere in the body: -32602 with the request's id.
    let (sent, r) = call_beyond(&c, "create_booking", args.clone(), |t| {
        t.replacen(r#""name":"#, &format!(r#""cursor":{MARK},"name":"#), 1)
    })
    .await;
    let answer = r.json();
    assert_eq!(r.error_code(), Some(-32602), "{answer}");
    assert_eq!(answer["id"], sent["id"], "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("params.cursor"), "{message}");

    // Nothing ran: no booking; the same call within 64 bits books.
    assert_eq!(bookings(&c).await, 0);
    args["duration_minutes"] = json!(90);
    let booked = c.call_tool("create_booking", args).await;
    assert!(!booked.is_error(), "{}", booked.text());
    assert_eq!(bookings(&c).await, 1);
}

on_every_backend!(
    beyond_64_bits,
    an_integer_beyond_64_bits_is_answered_with_its_id_and_changes_nothing
);
