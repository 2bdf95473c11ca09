//! The product's JSON API and the MCP tools are two adapters on the same booking services: for
//! every write tool, an input one adapter refuses is refused by the other for the same reason
//! (the same service error text, the same field), and neither writes anything (no record, no
//! outbox entry, no audit row). Half the cases start from the API, half from the tool.

use booking::ids::Kind;
use mcp_pipeline::Toolset;
use serde_json::{Value, json};

use crate::support::on_every_backend;
use crate::world::World;

/// Every write tool of the registry except `confirm_action` and `reject_action`, which act on
/// an agent's pending action (their product counterpart is the approval page).
const WRITE_TOOLS: [&str; 16] = [
    "create_customer",
    "update_customer",
    "delete_customer",
    "create_booking",
    "update_booking",
    "add_booking_note",
    "send_booking_confirmation",
    "cancel_booking",
    "reschedule_booking",
    "cancel_bookings",
    "delete_booking",
    "create_quote",
    "update_quote",
    "send_quote",
    "page_technician",
    "mute_booking_alerts",
];

fn seed_actor() -> booking::Actor {
    booking::Actor {
        tenant: store::TenantId::new("acme"),
        member: store::MemberId::new("seed"),
        rights: booking::rights::ALL
            .iter()
            .map(|r| (*r).to_owned())
            .collect(),
    }
}

/// The records the cases act on.
struct Fixture {
    customer: booking::Customer,
    technician: String,
    draft: booking::Booking,
    confirmed: booking::Booking,
    quote: booking::Quote,
}

async fn fixture(world: &World) -> Fixture {
    let store = world.app.store.clone();
    let seed = seed_actor();
    crate::support::workspaces::create(&store, "acme", "EUR", "19").await;
    let customers = booking::Customers::new(store.clone());
    let customer = customers
        .create(
            &seed,
            booking::NewCustomer {
                name: "Ada Lovelace".into(),
                email: "ada@example.com".into(),
                phone: None,
                address: None,
                notes: None,
            },
            None,
        )
        .unwrap()
        .commit(store.as_ref(), vec![])
        .await
        .unwrap();
    let technician = booking::Technicians::new(store.clone())
        .create(
            &seed,
            booking::NewTechnician {
                name: "Tom Weber".into(),
                skills: vec!["boiler".into()],
                working_hours: "08:00-17:00".into(),
                zone: "Europe/Berlin".into(),
                on_call: false,
                private_phone: "+49 30 555".into(),
            },
        )
        .unwrap()
        .commit(store.as_ref(), vec![])
        .await
        .unwrap();
    let bookings = booking::Bookings::new(store.clone());
    let mut made = Vec::new();
    for start in ["2055-06-01 09:00", "2055-06-02 09:00"] {
        let new = booking::NewBooking {
            customer: customer.id.clone(),
            technician: technician.id.clone(),
            service: "boiler service".into(),
            start: booking::When::from_input(start, "Europe/Berlin"),
            duration_minutes: 90,
        };
        made.push(
            bookings
                .create_draft(&seed, new, None, chrono::Utc::now())
                .await
                .unwrap()
                .commit(store.as_ref(), vec![])
                .await
                .unwrap(),
        );
    }
    let second = made.pop().unwrap();
    let draft = made.pop().unwrap();
    let confirmed = bookings
        .confirm(
            &seed,
            &second.id,
            &second.version,
            &customer.email,
            "seeded",
        )
        .await
        .unwrap()
        .commit(store.as_ref(), vec![])
        .await
        .unwrap();
    let line = booking::LineInput {
        description: "Filter".into(),
        quantity: "3".into(),
        unit_price: "19.99".into(),
    };
    let quote = booking::Quotes::new(store.clone())
        .create(&seed, &customer.id, &[line], None)
        .await
        .unwrap()
        .commit(store.as_ref(), vec![])
        .await
        .unwrap();
    Fixture {
        customer,
        technician: technician.handle(),
        draft,
        confirmed,
        quote,
    }
}

/// Everything the product and its audit hold for `acme`, as one comparable text.
async fn product_state(world: &World) -> String {
    let mut out = Vec::new();
    let kinds = [Kind::Customer, Kind::Technician, Kind::Booking, Kind::Quote];
    let mut partitions: Vec<String> = kinds
        .iter()
        .map(|k| booking::keys::partition(&store::TenantId::new("acme"), *k))
        .collect();
    partitions.extend(["acme#outbox", "acme#audit", "acme#alert"].map(String::from));
    for partition in partitions {
        let page = world
            .app
            .store
            .query(store::Query::partition(partition.clone()))
            .await
            .unwrap();
        assert!(page.next.is_none(), "{partition} fits one page");
        for (key, item) in page.items {
            out.push(format!("{key:?} {item:?}"));
        }
    }
    out.sort();
    out.join("\n")
}

/// Which adapter is asked first (the "vice versa" of the issue: half the cases start from an
/// input the API refuses, half from one the tool refuses); the other must refuse it the same
/// way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum First {
    Api,
    Tool,
}

struct Case {
    tool: &'static str,
    arguments: Value,
    method: &'static str,
    path: String,
    body: Value,
    status: u16,
    first: First,
}

/// What one adapter said: the reason (service text) and the field, if any.
#[derive(Debug)]
struct Refusal {
    reason: String,
    field: Option<String>,
}

fn cases(f: &Fixture) -> Vec<Case> {
    let ada = f.customer.handle();
    let draft = f.draft.handle();
    let confirmed = f.confirmed.handle();
    let quote = f.quote.handle();
    let tom = f.technician.clone();
    let where_it_is = f
        .confirmed
        .start
        .with_timezone(&f.confirmed.zone)
        .format("%Y-%m-%d %H:%M")
        .to_string();
    let case = |tool, arguments: Value, method, path: String, body: Value, status, first| Case {
        tool,
        arguments,
        method,
        path,
        body,
        status,
        first,
    };
    vec![
        case(
            "create_customer",
            json!({"name": "X", "email": "not-an-email"}),
            "POST",
            "/api/customers".into(),
            json!({"name": "X", "email": "not-an-email"}),
            400,
            First::Api,
        ),
        case(
            "update_customer",
            json!({"customer": ada, "version": f.customer.version, "phone": "call me"}),
            "PATCH",
            format!("/api/customers/{ada}"),
            json!({"version": f.customer.version, "phone": "call me"}),
            400,
            First::Tool,
        ),
        case(
            "delete_customer",
            json!({"customer": "cus_0000000000000000000z"}),
            "DELETE",
            "/api/customers/cus_0000000000000000000z".into(),
            json!({}),
            404,
            First::Api,
        ),
        case(
            "create_booking",
            // 02:30 does not exist in Berlin on 2055-03-28 (the clocks jump from 02:00 to 03:00).
            json!({"customer": ada, "technician": tom, "service": "boiler service", "start": "2055-03-28 02:30", "zone": "Europe/Berlin", "duration_minutes": 60}),
            "POST",
            "/api/bookings".into(),
            json!({"customer": ada, "technician": tom, "service": "boiler service", "start": "2055-03-28 02:30", "zone": "Europe/Berlin", "duration_minutes": 60}),
            400,
            First::Tool,
        ),
        // Tom is booked 09:00-10:30 by the draft: another booking of his at 09:30 is refused
        // (ADR 46), and so is the draft moved onto the confirmed booking, or the confirmed one
        // onto the draft.
        case(
            "create_booking",
            json!({"customer": ada, "technician": tom, "service": "gas check", "start": "2055-06-01 09:30", "zone": "Europe/Berlin", "duration_minutes": 60}),
            "POST",
            "/api/bookings".into(),
            json!({"customer": ada, "technician": tom, "service": "gas check", "start": "2055-06-01 09:30", "zone": "Europe/Berlin", "duration_minutes": 60}),
            409,
            First::Api,
        ),
        case(
            "update_booking",
            json!({"booking": draft, "version": f.draft.version, "start": "2055-06-02 10:00", "zone": "Europe/Berlin"}),
            "PATCH",
            format!("/api/bookings/{draft}"),
            json!({"version": f.draft.version, "start": "2055-06-02 10:00", "zone": "Europe/Berlin"}),
            409,
            First::Tool,
        ),
        case(
            "reschedule_booking",
            json!({"booking": confirmed, "version": f.confirmed.version, "start": "2055-06-01 08:00", "zone": "Europe/Berlin"}),
            "POST",
            format!("/api/bookings/{confirmed}/reschedule"),
            json!({"version": f.confirmed.version, "start": "2055-06-01 08:00", "zone": "Europe/Berlin"}),
            409,
            First::Api,
        ),
        case(
            "update_booking",
            json!({"booking": draft, "version": f.draft.version, "duration_minutes": 5}),
            "PATCH",
            format!("/api/bookings/{draft}"),
            json!({"version": f.draft.version, "duration_minutes": 5}),
            400,
            First::Api,
        ),
        case(
            "update_booking",
            json!({"booking": draft, "version": f.draft.version, "start": "2055-06-03 10:00"}),
            "PATCH",
            format!("/api/bookings/{draft}"),
            json!({"version": f.draft.version, "start": "2055-06-03 10:00"}),
            400,
            First::Tool,
        ),
        case(
            "add_booking_note",
            json!({"booking": draft, "note": "   "}),
            "POST",
            format!("/api/bookings/{draft}/notes"),
            json!({"note": "   "}),
            400,
            First::Tool,
        ),
        case(
            "send_booking_confirmation",
            json!({"booking": confirmed, "version": f.confirmed.version}),
            "POST",
            format!("/api/bookings/{confirmed}/confirmation"),
            json!({"version": f.confirmed.version}),
            422,
            First::Api,
        ),
        case(
            "cancel_booking",
            json!({"booking": draft, "version": "0000stale000"}),
            "POST",
            format!("/api/bookings/{draft}/cancellation"),
            json!({"version": "0000stale000"}),
            409,
            First::Tool,
        ),
        case(
            "reschedule_booking",
            json!({"booking": draft, "version": f.draft.version, "start": "2055-06-05 09:00", "zone": "Europe/Berlin"}),
            "POST",
            format!("/api/bookings/{draft}/reschedule"),
            json!({"version": f.draft.version, "start": "2055-06-05 09:00", "zone": "Europe/Berlin"}),
            422,
            First::Api,
        ),
        // A move to where the booking is already would tell the customer of a change that
        // is none (a retried move).
        case(
            "reschedule_booking",
            json!({"booking": confirmed, "version": f.confirmed.version, "start": where_it_is, "zone": "Europe/Berlin"}),
            "POST",
            format!("/api/bookings/{confirmed}/reschedule"),
            json!({"version": f.confirmed.version, "start": where_it_is, "zone": "Europe/Berlin"}),
            422,
            First::Api,
        ),
        case(
            "cancel_bookings",
            json!({"technician": tom, "expected_count": 5}),
            "POST",
            "/api/bookings/cancellations".into(),
            json!({"technician": tom, "expected_count": 5}),
            422,
            First::Tool,
        ),
        case(
            "cancel_bookings",
            json!({"expected_count": 1}),
            "POST",
            "/api/bookings/cancellations".into(),
            json!({"expected_count": 1}),
            400,
            First::Api,
        ),
        case(
            "delete_booking",
            json!({"booking": confirmed, "version": f.confirmed.version}),
            "DELETE",
            format!("/api/bookings/{confirmed}"),
            json!({"version": f.confirmed.version}),
            422,
            First::Tool,
        ),
        case(
            "create_quote",
            json!({"customer": ada, "lines": [{"description": "Filter", "quantity": "3", "unit_price": "abc"}]}),
            "POST",
            "/api/quotes".into(),
            json!({"customer": ada, "lines": [{"description": "Filter", "quantity": "3", "unit_price": "abc"}]}),
            400,
            First::Api,
        ),
        case(
            "update_quote",
            json!({"quote": quote, "version": "0000stale000", "lines": [{"description": "Filter", "quantity": "1", "unit_price": "10"}]}),
            "PATCH",
            format!("/api/quotes/{quote}"),
            json!({"version": "0000stale000", "lines": [{"description": "Filter", "quantity": "1", "unit_price": "10"}]}),
            409,
            First::Tool,
        ),
        case(
            "send_quote",
            json!({"quote": quote, "version": "0000stale000"}),
            "POST",
            format!("/api/quotes/{quote}/send"),
            json!({"version": "0000stale000"}),
            409,
            First::Api,
        ),
        case(
            "page_technician",
            json!({"technician": tom, "message": ""}),
            "POST",
            format!("/api/technicians/{tom}/pages"),
            json!({"message": ""}),
            400,
            First::Tool,
        ),
        case(
            "mute_booking_alerts",
            json!({"booking": confirmed, "hours": 0}),
            "POST",
            format!("/api/bookings/{confirmed}/mute"),
            json!({"hours": 0}),
            400,
            First::Api,
        ),
    ]
}

async fn the_api_and_the_tools_refuse_every_write_for_the_same_reason(world: World) {
    world.member("acme", "ana", "owner").await;
    let (_, token) = world.connect("acme", "ana", Toolset::Full).await;
    let agent = world.client(&token);
    let api = format!(
        "Bearer {}",
        crate::support::api_token(&world.app, "acme", "ana")
            .await
            .unwrap()
    );
    let f = fixture(&world).await;
    let cases = cases(&f);
    for tool in WRITE_TOOLS {
        assert!(
            cases.iter().any(|c| c.tool == tool),
            "no parity case for {tool}"
        );
    }
    for case in cases {
        let label = format!("{} / {} {}", case.tool, case.method, case.path);
        let before = product_state(&world).await;
        let (from_api, from_tool) = match case.first {
            First::Api => {
                let api = api_refusal(&world, &api, &case, &label).await;
                assert_eq!(
                    product_state(&world).await,
                    before,
                    "{label}: the API wrote"
                );
                (api, tool_refusal(&agent, &case, &label).await)
            }
            First::Tool => {
                let tool = tool_refusal(&agent, &case, &label).await;
                assert_eq!(
                    product_state(&world).await,
                    before,
                    "{label}: the tool wrote"
                );
                (api_refusal(&world, &api, &case, &label).await, tool)
            }
        };
        assert_eq!(
            from_api.field, from_tool.field,
            "{label}: the field differs: {from_api:?} vs {from_tool:?}"
        );
        // The tool's message is the service's reason with the field in front (`field`: ...)
        // or capitalized; the API carries the reason as the service wrote it.
        assert!(
            !from_api.reason.is_empty()
                && from_tool
                    .reason
                    .to_lowercase()
                    .contains(&from_api.reason.to_lowercase()),
            "{label}: the reasons differ: API {:?}, tool {:?}",
            from_api.reason,
            from_tool.reason
        );
        assert_eq!(
            product_state(&world).await,
            before,
            "{label}: a refused input wrote something"
        );
    }
}

/// Sends the case to the API; it must refuse with the case's status and name a reason.
async fn api_refusal(world: &World, api: &str, case: &Case, label: &str) -> Refusal {
    let reply = crate::web::send(
        world,
        case.method,
        &case.path,
        &[("content-type", "application/json"), ("authorization", api)],
        &case.body.to_string(),
    )
    .await;
    assert_eq!(reply.status, case.status, "{label}: {}", reply.body);
    let body: Value = serde_json::from_str(&reply.body).unwrap();
    Refusal {
        reason: body["reason"]
            .as_str()
            .unwrap_or_else(|| panic!("{label}: the API names no reason: {body}"))
            .to_owned(),
        field: body["field"].as_str().map(str::to_owned),
    }
}

/// Calls the tool over JSON-RPC; it must answer with a tool error.
async fn tool_refusal(agent: &mcp_test_client::TestClient, case: &Case, label: &str) -> Refusal {
    let result = agent.call_tool(case.tool, case.arguments.clone()).await;
    assert!(
        result.is_error(),
        "{label}: the tool accepted it: {}",
        result.text()
    );
    Refusal {
        reason: result.structured()["message"]
            .as_str()
            .unwrap_or_else(|| panic!("{label}: the tool names no message: {}", result.text()))
            .to_owned(),
        field: result.structured()["field"].as_str().map(str::to_owned),
    }
}
on_every_backend!(
    api_parity,
    the_api_and_the_tools_refuse_every_write_for_the_same_reason
);

/// The API's routes act (with the audit row and the outbox message the tools' confirmations
/// would write), need the right, and never send a quote.
async fn the_api_acts_with_the_members_live_rights(world: World) {
    world.member("acme", "ana", "owner").await;
    world.member("acme", "vic", "viewer").await;
    let f = fixture(&world).await;
    let token = |member: &'static str| {
        let world = &world;
        async move {
            format!(
                "Bearer {}",
                crate::support::api_token(&world.app, "acme", member)
                    .await
                    .unwrap()
            )
        }
    };
    let (ana, vic) = (token("ana").await, token("vic").await);
    let call = |method: &'static str, path: String, auth: String, body: Value| {
        let world = &world;
        async move {
            let r = crate::web::send(
                world,
                method,
                &path,
                &[
                    ("content-type", "application/json"),
                    ("authorization", &auth),
                ],
                &body.to_string(),
            )
            .await;
            let parsed: Value = serde_json::from_str(&r.body).unwrap_or(Value::Null);
            (r.status, parsed)
        }
    };
    let outbox = || async {
        world
            .app
            .store
            .query(store::Query::partition("acme#outbox"))
            .await
            .unwrap()
            .items
            .len()
    };
    let draft = f.draft.handle();
    let seeded_messages = outbox().await;

    // A viewer's token is refused by the service, and nothing is written.
    let before = product_state(&world).await;
    let (status, body) = call(
        "POST",
        format!("/api/bookings/{draft}/notes"),
        vic.clone(),
        json!({"note": "gate code 1234"}),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["right"], booking::rights::BOOKINGS_WRITE);
    assert_eq!(product_state(&world).await, before);

    // The owner's token acts; the audit row names the API and the member.
    let (status, body) = call(
        "POST",
        format!("/api/bookings/{draft}/notes"),
        ana.clone(),
        json!({"note": "gate code 1234"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["notes"][0], "gate code 1234");
    let audit = crate::support::audit_rows(world.app.store.as_ref(), "acme", None, 5).await;
    assert_eq!(audit[0].action, "api.add_booking_note");
    assert_eq!(audit[0].actor, store::MemberId::new("ana"));
    assert_eq!(audit[0].channel, identity::Channel::Api);

    // Confirming a draft sends the customer exactly one message, at once.
    let (status, body) = call(
        "POST",
        format!("/api/bookings/{draft}/confirmation"),
        ana.clone(),
        json!({"version": body["version"]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["booking"]["status"], "confirmed");
    assert_eq!(outbox().await, seeded_messages + 1);

    // A valid send_quote is checked but refused: quotes are approved in the product.
    let before = product_state(&world).await;
    let (status, body) = call(
        "POST",
        format!("/api/quotes/{}/send", f.quote.handle()),
        ana.clone(),
        json!({"version": f.quote.version}),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"], "approval_required");
    assert_eq!(product_state(&world).await, before, "no quote was sent");

    // Deleting a customer runs at once for a member with records:delete, unless the customer
    // has open bookings (nothing is deleted, and the bookings are named).
    let (status, body) = call(
        "DELETE",
        format!("/api/customers/{}", f.customer.handle()),
        vic,
        json!({}),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    let (status, body) = call(
        "DELETE",
        format!("/api/customers/{}", f.customer.handle()),
        ana.clone(),
        json!({}),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert!(body["reason"].as_str().unwrap().contains(&draft), "{body}");
    let kept = booking::Customers::new(world.app.store.clone())
        .get(&seed_actor(), &f.customer.id)
        .await;
    assert!(kept.is_ok(), "the customer is kept");
    let (status, body) = call(
        "POST",
        "/api/customers".into(),
        ana.clone(),
        json!({"name": "Brief Visit", "email": "brief@example.com"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let brief = body["customer"].as_str().unwrap().to_owned();
    let (status, body) = call("DELETE", format!("/api/customers/{brief}"), ana, json!({})).await;
    assert_eq!(status, 200, "{body}");
    let id = booking::CustomerId::new(brief.split_once('_').unwrap().1);
    let gone = booking::Customers::new(world.app.store.clone())
        .get(&seed_actor(), &id)
        .await;
    assert!(matches!(gone, Err(booking::BookingError::NotFound { .. })));
}
on_every_backend!(api_routes, the_api_acts_with_the_members_live_rights);
