//! Duplicate claims follow their records: a move takes the new slot and frees the old one, a
//! cancelled or deleted record frees its claim, and a record made as a deliberate duplicate
//! (`separate`) neither holds a claim nor touches another's. Through the real handler, on
//! SQLite and the local DynamoDB server (claims are conditional writes in the record's
//! transaction).

use serde_json::{Value, json};

use crate::booking_tools::{
    confirm, confirmed_booking, draft, seeded_customer, seeded_technician, setup,
};
use crate::support::on_every_backend;
use crate::world::World;

fn code(call: &mcp_test_client::ToolCall) -> String {
    call.structured()["code"]
        .as_str()
        .unwrap_or("ok")
        .to_owned()
}

async fn created(c: &mcp_test_client::TestClient, args: Value) -> Value {
    let call = c.call_tool("create_booking", args).await;
    assert!(!call.is_error(), "{}", call.text());
    call.structured()["booking"].clone()
}

async fn a_moved_booking_takes_its_new_slot_and_frees_the_old(world: World) {
    let (c, _) = setup(&world).await;
    let ada = seeded_customer(&world, "acme", "Ada Lovelace", "ada@example.com").await;
    let tom = seeded_technician(&world, "acme", "Tom Weber", "Europe/Berlin").await;
    // A draft moved with update_booking.
    let b = created(&c, draft(&ada, &tom, "2055-06-07 09:00")).await;
    let moved = c
        .call_tool(
            "update_booking",
            json!({"booking": b["booking"], "version": b["version"], "start": "2055-06-08 09:00", "zone": "Europe/Berlin"}),
        )
        .await;
    assert!(!moved.is_error(), "{}", moved.text());
    let at_new = c
        .call_tool("create_booking", draft(&ada, &tom, "2055-06-08 09:00"))
        .await;
    assert_eq!(
        code(&at_new),
        "conflict",
        "the new start is guarded: {}",
        at_new.text()
    );
    assert_eq!(at_new.structured()["existing"], b["booking"]);
    let at_old = c
        .call_tool("create_booking", draft(&ada, &tom, "2055-06-07 09:00"))
        .await;
    assert!(
        !at_old.is_error(),
        "the old start is free: {}",
        at_old.text()
    );
    // A moved draft can be deleted (its claim moved with it).
    let m = moved.structured()["booking"].clone();
    let delete = c
        .call_tool(
            "delete_booking",
            json!({"booking": m["booking"], "version": m["version"]}),
        )
        .await;
    let deleted = confirm(&c, &delete).await;
    assert!(!deleted.is_error(), "{}", deleted.text());
    let again = c
        .call_tool("create_booking", draft(&ada, &tom, "2055-06-08 09:00"))
        .await;
    assert!(
        !again.is_error(),
        "a deleted booking's slot is free: {}",
        again.text()
    );
    // A confirmed booking moved with reschedule_booking.
    let confirmed = confirmed_booking(&c, &ada, &tom, "2055-07-01 09:00").await;
    let preview = c
        .call_tool(
            "reschedule_booking",
            json!({"booking": confirmed["booking"], "version": confirmed["version"], "start": "2055-07-02 09:00", "zone": "Europe/Berlin"}),
        )
        .await;
    let rescheduled = confirm(&c, &preview).await;
    assert!(!rescheduled.is_error(), "{}", rescheduled.text());
    let at_new = c
        .call_tool("create_booking", draft(&ada, &tom, "2055-07-02 09:00"))
        .await;
    assert_eq!(code(&at_new), "conflict", "{}", at_new.text());
    let at_old = c
        .call_tool("create_booking", draft(&ada, &tom, "2055-07-01 09:00"))
        .await;
    assert!(!at_old.is_error(), "{}", at_old.text());
}
on_every_backend!(
    moved_bookings,
    a_moved_booking_takes_its_new_slot_and_frees_the_old
);

async fn cancelled_and_separate_bookings_block_nothing(world: World) {
    let (c, _) = setup(&world).await;
    let ada = seeded_customer(&world, "acme", "Ada Lovelace", "ada@example.com").await;
    let tom = seeded_technician(&world, "acme", "Tom Weber", "Europe/Berlin").await;
    let b = created(&c, draft(&ada, &tom, "2055-06-07 09:00")).await;
    let cancel = c
        .call_tool(
            "cancel_booking",
            json!({"booking": b["booking"], "version": b["version"]}),
        )
        .await;
    assert!(!cancel.is_error(), "{}", cancel.text());
    let cancel = if cancel.structured()["status"] == "PREVIEW" {
        confirm(&c, &cancel).await
    } else {
        cancel
    };
    assert!(!cancel.is_error(), "{}", cancel.text());
    // Other arguments than the first create's, so that its replay record does not answer.
    let mut args = draft(&ada, &tom, "2055-06-07 09:00");
    args["service"] = json!("boiler check");
    let rebooked = c.call_tool("create_booking", args).await;
    assert!(
        !rebooked.is_error(),
        "a cancelled booking frees its slot: {}",
        rebooked.text()
    );
    // A deliberate duplicate of the rebooked slot: holds no claim, so it can be deleted and
    // deleting it leaves the original's claim in place.
    let mut args = draft(&ada, &tom, "2055-06-07 09:00");
    args["separate"] = json!(true);
    args["reason"] = json!("two visits at once: one for the boiler, one for the meter");
    let separate = created(&c, args).await;
    let delete = c
        .call_tool(
            "delete_booking",
            json!({"booking": separate["booking"], "version": separate["version"]}),
        )
        .await;
    let deleted = confirm(&c, &delete).await;
    assert!(
        !deleted.is_error(),
        "a separate booking can be deleted: {}",
        deleted.text()
    );
    // Other arguments than the rebooking's, so that its replay record does not answer.
    let mut args = draft(&ada, &tom, "2055-06-07 09:00");
    args["service"] = json!("boiler repair");
    let third = c.call_tool("create_booking", args).await;
    assert_eq!(
        code(&third),
        "conflict",
        "the original still holds its slot: {}",
        third.text()
    );
    assert_eq!(
        third.structured()["existing"],
        rebooked.structured()["booking"]["booking"]
    );
}
on_every_backend!(
    cancelled_and_separate_bookings,
    cancelled_and_separate_bookings_block_nothing
);

async fn a_separate_customer_holds_no_claim_on_its_email(world: World) {
    let (c, _) = setup(&world).await;
    let first = c
        .call_tool(
            "create_customer",
            json!({"name": "Ada Lovelace", "email": "ada@example.com"}),
        )
        .await;
    assert!(!first.is_error(), "{}", first.text());
    let separate = c
        .call_tool(
            "create_customer",
            json!({"name": "Ada Lovelace (office)", "email": "ada@example.com", "separate": true, "reason": "her office shares the address"}),
        )
        .await;
    assert!(!separate.is_error(), "{}", separate.text());
    let s = separate.structured()["customer"].clone();
    // It can change its email (it holds no claim to move), and the new one is not claimed.
    let changed = c
        .call_tool(
            "update_customer",
            json!({"customer": s["customer"], "version": s["version"], "email": "office@example.com"}),
        )
        .await;
    assert!(!changed.is_error(), "{}", changed.text());
    // Deleting it leaves the first customer's claim: a third with that email is a duplicate.
    let delete = c
        .call_tool("delete_customer", json!({"customer": s["customer"]}))
        .await;
    let deleted = confirm(&c, &delete).await;
    assert!(!deleted.is_error(), "{}", deleted.text());
    let third = c
        .call_tool(
            "create_customer",
            json!({"name": "Ada L.", "email": "ada@example.com"}),
        )
        .await;
    assert_eq!(code(&third), "conflict", "{}", third.text());
    assert_eq!(
        third.structured()["existing"],
        first.structured()["customer"]["customer"]
    );
}
on_every_backend!(
    separate_customers,
    a_separate_customer_holds_no_claim_on_its_email
);

fn filter_quote(customer: &str, quantity: &str) -> Value {
    json!({"customer": customer, "lines": [{"description": "Filter", "quantity": quantity, "unit_price": "19.99"}]})
}

/// A quote's business key is its customer and lines: a second identical quote is refused and
/// names the first, `separate` with a reason makes one anyway (and holds no claim), and the
/// claim follows the lines when a draft changes. Through MCP and the JSON API alike.
async fn a_second_identical_quote_is_a_duplicate(world: World) {
    let (c, _) = setup(&world).await;
    crate::booking_tools::tenant_settings(&world, "acme", "EUR", "19").await;
    let ada = seeded_customer(&world, "acme", "Ada Lovelace", "ada@example.com").await;
    let first = c.call_tool("create_quote", filter_quote(&ada, "3")).await;
    assert!(!first.is_error(), "{}", first.text());
    let q = first.structured()["quote"].clone();
    // Written differently, the same decimals are the same lines.
    let again = c.call_tool("create_quote", filter_quote(&ada, "3.0")).await;
    assert_eq!(code(&again), "conflict", "{}", again.text());
    assert_eq!(again.structured()["existing"], q["quote"]);
    let no_reason = c
        .call_tool(
            "create_quote",
            json!({"customer": ada, "lines": filter_quote(&ada, "3")["lines"], "separate": true}),
        )
        .await;
    assert_eq!(code(&no_reason), "validation");
    let separate = c
        .call_tool(
            "create_quote",
            json!({"customer": ada, "lines": filter_quote(&ada, "3")["lines"], "separate": true, "reason": "a second site"}),
        )
        .await;
    assert!(!separate.is_error(), "{}", separate.text());
    // The draft's lines change: the old content is free, the new one guarded.
    let updated = c
        .call_tool(
            "update_quote",
            json!({"quote": q["quote"], "version": q["version"], "lines": filter_quote(&ada, "4")["lines"]}),
        )
        .await;
    assert!(!updated.is_error(), "{}", updated.text());
    let at_new = c.call_tool("create_quote", filter_quote(&ada, "4")).await;
    assert_eq!(code(&at_new), "conflict", "{}", at_new.text());
    let at_old = c.call_tool("create_quote", filter_quote(&ada, "3")).await;
    assert!(
        !at_old.is_error(),
        "the old lines are free: {}",
        at_old.text()
    );
    // The JSON API guards the same key and takes the same `separate`.
    let api = format!(
        "Bearer {}",
        crate::support::api_token(&world.app, "acme", "ana")
            .await
            .unwrap()
    );
    let headers = [
        ("content-type", "application/json"),
        ("authorization", api.as_str()),
    ];
    let post = |body: Value| {
        let world = &world;
        async move { crate::web::send(world, "POST", "/api/quotes", &headers, &body.to_string()).await }
    };
    let dup = post(filter_quote(&ada, "4")).await;
    assert_eq!(dup.status, 409, "{}", dup.body);
    let quotes_before = world
        .app
        .store
        .query(store::Query::partition("acme#quote"))
        .await
        .unwrap()
        .items
        .len();
    let bad =
        post(json!({"customer": ada, "lines": filter_quote(&ada, "4")["lines"], "separate": true}))
            .await;
    assert_eq!(bad.status, 400, "{}", bad.body);
    let ok = post(json!({"customer": ada, "lines": filter_quote(&ada, "4")["lines"], "separate": true, "reason": "a second site"})).await;
    assert_eq!(ok.status, 201, "{}", ok.body);
    let quotes_after = world
        .app
        .store
        .query(store::Query::partition("acme#quote"))
        .await
        .unwrap()
        .items
        .len();
    assert_eq!(
        quotes_after,
        quotes_before + 1,
        "only the separate one was written"
    );
}
on_every_backend!(identical_quotes, a_second_identical_quote_is_a_duplicate);
