//! Every answer leads on (issue 16): a model that does what it is told starts from realistic
//! calls, the mistakes models make among them, and follows every suggestion verbatim
//! ([`crate::support::hint_follower`]). For every toolset on both store backends: at least 50
//! starting calls, no dead end, no invalid or placeholder suggestion, no loop. The counts are
//! printed (`cargo test -- --nocapture` shows them; `tests/run` prints them).

use mcp_pipeline::Toolset;
use serde_json::{Value, json};

use crate::booking_tools::{
    confirmed_booking, seeded_customer, seeded_technician, tenant_settings,
};
use crate::support::dates::{next_clock_change as next_change, tuesday_ahead as weekday_ahead};
use crate::support::hint_follower::Follower;
use crate::support::on_every_backend;
use crate::world::World;

/// The records the starting calls name.
struct Seeded {
    ada: String,
    tom: String,
    draft: Value,
    confirmed: Value,
    quote: Value,
}

async fn seed(world: &World) -> Seeded {
    world.member("acme", "ana", "owner").await;
    tenant_settings(world, "acme", "EUR", "19").await;
    let ada = seeded_customer(world, "acme", "Ada Lovelace", "ada@example.com").await;
    let sam = seeded_customer(world, "acme", "Sam Smith", "sam@example.com").await;
    seeded_customer(world, "acme", "Sam Smith", "sam.smith@example.org").await;
    let tom = seeded_technician(world, "acme", "Tom Weber", "Europe/Berlin").await;
    let (_, token) = world.connect("acme", "ana", Toolset::Full).await;
    let c = world.client(&token);
    let day = weekday_ahead(6);
    let draft = c
        .call_tool(
            "create_booking",
            json!({"customer": ada, "technician": tom, "service": "boiler service", "start": format!("{day} 13:00"), "zone": "Europe/Berlin", "duration_minutes": 60}),
        )
        .await
        .structured()["booking"]
        .clone();
    let confirmed = confirmed_booking(&c, &sam, &tom, &format!("{day} 09:00")).await;
    let quote = c
        .call_tool(
            "create_quote",
            json!({"customer": ada, "lines": [{"description": "Boiler service", "quantity": "1", "unit_price": "120.00"}]}),
        )
        .await;
    let quote = quote.structured()["quote"].clone();
    Seeded {
        ada,
        tom,
        draft,
        confirmed,
        quote,
    }
}

/// Realistic starting calls, right and wrong, over every tool.
fn starting_calls(s: &Seeded) -> Vec<(&'static str, Value)> {
    let mut calls = customer_calls(s);
    calls.extend(booking_calls(s));
    calls.extend(time_calls(s));
    calls.extend(quote_and_other_calls(s));
    calls.extend(mistaken_calls(s));
    calls
}

/// The mistakes models make (issue 46): arguments missing or extra, values of the wrong type,
/// values copied from results as they were shown, values from another tool's schema.
fn mistaken_calls(s: &Seeded) -> Vec<(&'static str, Value)> {
    let (ada, d, q) = (&s.ada, &s.draft, &s.quote);
    let wrapped = |text: &str| json!({"untrusted_text": text, "truncated": false, "note": "Text written by someone outside this workspace."});
    vec![
        ("create_customer", json!({})),
        ("create_booking", json!({"customer": ada})),
        ("get_booking", json!({})),
        (
            "update_customer",
            json!({"customer": ada, "phone": "+49 30 1"}),
        ),
        ("send_quote", json!({"quote": q["quote"]})),
        ("find_customers", json!({"query": "Ada", "page": 2})),
        (
            "get_customer",
            json!({"customer": ada, "include": "bookings"}),
        ),
        ("find_bookings", json!({"limit": "ten"})),
        ("find_customers", json!({"query": 42})),
        ("find_customers", json!({"query": wrapped("Ada Lovelace")})),
        (
            "create_customer",
            json!({"name": wrapped("Ada Lovelace"), "email": "ada2@example.com"}),
        ),
        ("get_customer", json!({"customer": {"customer": ada}})),
        ("find_bookings", json!({"scope": "all"})),
        ("list_recent_changes", json!({"status": "confirmed"})),
        (
            "get_booking",
            json!({"booking": d["booking"], "version": d["version"]}),
        ),
        ("cancel_booking", json!({"booking": d["booking"]})),
    ]
}

fn customer_calls(s: &Seeded) -> Vec<(&'static str, Value)> {
    let ada = &s.ada;
    vec![
        ("get_server_status", json!({})),
        ("find_customers", json!({"query": "Ada"})),
        ("find_customers", json!({"query": "Ada Lovelace"})),
        ("find_customers", json!({"query": "Nobody Here"})),
        ("find_customers", json!({})),
        (
            "find_customers",
            json!({"query": "Sam Smith", "limit": "5"}),
        ),
        ("find_customers", json!({"name": "Ada"})),
        ("get_customer", json!({"customer": ada})),
        ("get_customer", json!({"customer": "Ada Lovelace"})),
        ("get_customer", json!({"customer": "Sam Smith"})),
        ("get_customer", json!({"customer": "Grace Hopper"})),
        (
            "get_customer",
            json!({"customer": "cus_0000000000000000000X"}),
        ),
        ("get_customer", json!({})),
        (
            "get_customer",
            json!({"customer": ada, "include_history": true}),
        ),
        ("get_customer", json!({"id": ada})),
        (
            "create_customer",
            json!({"name": "Grace Hopper", "email": "grace@example.com"}),
        ),
        (
            "create_customer",
            json!({"name": "Ada Lovelace", "email": "ada@example.com"}),
        ),
        ("create_customer", json!({"name": "No Email"})),
        (
            "create_customer",
            json!({"name": "Bad Mail", "email": "not-an-email"}),
        ),
        (
            "update_customer",
            json!({"customer": ada, "version": "000000000000", "phone": "+49 30 9"}),
        ),
        (
            "update_customer",
            json!({"customer": ada, "phone": "+49 30 9"}),
        ),
        (
            "update_customer",
            json!({"customer": "Ada Lovelace", "version": "000000000000", "phone": "+49 30 9"}),
        ),
        ("delete_customer", json!({"customer": "Grace Hopper"})),
        ("list_technicians", json!({})),
        ("list_technicians", json!({"skill": "boiler"})),
    ]
}

fn booking_calls(s: &Seeded) -> Vec<(&'static str, Value)> {
    let (ada, tom) = (&s.ada, &s.tom);
    let (d, c) = (&s.draft, &s.confirmed);
    let later = format!("{} 15:00", weekday_ahead(7));
    vec![
        ("find_bookings", json!({})),
        ("find_bookings", json!({"customer": ada})),
        ("find_bookings", json!({"customer": "Ada Lovelace"})),
        ("find_bookings", json!({"status": "canceled"})),
        ("find_bookings", json!({"status": "archived"})),
        ("find_bookings", json!({"technician": "Tom Weber"})),
        ("find_bookings", json!({"query": "boiler"})),
        ("get_booking", json!({"booking": d["booking"]})),
        (
            "get_booking",
            json!({"booking": "bkg_0000000000000000000X"}),
        ),
        ("get_booking", json!({"booking": "Ada's boiler service"})),
        (
            "update_booking",
            json!({"booking": d["booking"], "version": d["version"], "service": "boiler repair"}),
        ),
        (
            "update_booking",
            json!({"booking": d["booking"], "version": "000000000000", "duration_minutes": 90}),
        ),
        (
            "update_booking",
            json!({"booking": c["booking"], "version": c["version"], "start": later, "zone": "Europe/Berlin"}),
        ),
        (
            "update_booking",
            json!({"booking": d["booking"], "start": later, "zone": "Europe/Berlin"}),
        ),
        (
            "send_booking_confirmation",
            json!({"booking": d["booking"], "version": "000000000000"}),
        ),
        (
            "send_booking_confirmation",
            json!({"booking": c["booking"], "version": c["version"]}),
        ),
        (
            "send_booking_confirmation",
            json!({"booking": d["booking"]}),
        ),
        (
            "add_booking_note",
            json!({"booking": d["booking"], "note": "Gate code 1234"}),
        ),
        (
            "add_booking_note",
            json!({"booking": "bkg_0000000000000000000X", "note": "x"}),
        ),
        (
            "cancel_booking",
            json!({"booking": c["booking"], "version": "000000000000"}),
        ),
        (
            "cancel_booking",
            json!({"booking": d["booking"], "version": d["version"]}),
        ),
        (
            "reschedule_booking",
            json!({"booking": c["booking"], "version": c["version"], "start": later, "zone": "Europe/Berlin"}),
        ),
        (
            "delete_booking",
            json!({"booking": "bkg_0000000000000000000X", "version": "000000000000"}),
        ),
        ("cancel_bookings", json!({"customer": ada})),
        (
            "cancel_bookings",
            json!({"technician": tom, "expected_count": 7}),
        ),
        (
            "mute_booking_alerts",
            json!({"booking": c["booking"], "hours": 2}),
        ),
        (
            "mute_booking_alerts",
            json!({"booking": c["booking"], "hours": "forever"}),
        ),
    ]
}

/// Times: no zone, unknown zones, DST gaps and folds, the past, words for dates.
fn time_calls(s: &Seeded) -> Vec<(&'static str, Value)> {
    let (ada, tom) = (&s.ada, &s.tom);
    let day = weekday_ahead(8);
    let gap = format!("{} 02:30", next_change(3));
    let fold = format!("{} 02:30", next_change(10));
    let create = |start: &str, zone: Value| json!({"customer": ada, "technician": tom, "service": "boiler service", "start": start, "zone": zone, "duration_minutes": 60});
    let d = &s.draft;
    vec![
        (
            "find_available_slots",
            json!({"technician": tom, "date": day, "duration_minutes": 60}),
        ),
        (
            "find_available_slots",
            json!({"technician": "Tom Weber", "date": day, "duration_minutes": 60}),
        ),
        (
            "find_available_slots",
            json!({"technician": tom, "date": "next tuesday", "duration_minutes": 60}),
        ),
        (
            "find_available_slots",
            json!({"technician": tom, "date": "2024-05-07", "duration_minutes": 60}),
        ),
        (
            "find_available_slots",
            json!({"technician": tom, "date": day}),
        ),
        (
            "find_available_slots",
            json!({"technician": "tec_0000000000000000000X", "date": day, "duration_minutes": 60}),
        ),
        (
            "create_booking",
            create(&format!("{day} 10:00"), json!("Europe/Berlin")),
        ),
        (
            "create_booking",
            json!({"customer": ada, "technician": tom, "service": "boiler service", "start": format!("{day} 11:00"), "duration_minutes": 60}),
        ),
        (
            "create_booking",
            create(&format!("{day} 12:00"), json!("CEST")),
        ),
        (
            "create_booking",
            create(&format!("{day} 12:00"), json!("europe/berlin")),
        ),
        ("create_booking", create(&gap, json!("Europe/Berlin"))),
        ("create_booking", create(&fold, json!("Europe/Berlin"))),
        (
            "create_booking",
            create("2025-06-10 10:00", json!("Europe/Berlin")),
        ),
        (
            "create_booking",
            create(&format!("{day} 25:00"), json!("Europe/Berlin")),
        ),
        (
            "create_booking",
            json!({"customer": "Ada Lovelace", "technician": "Tom Weber", "service": "boiler service", "start": format!("{day} 14:00"), "zone": "Europe/Berlin", "duration_minutes": "60"}),
        ),
        (
            "create_booking",
            json!({"customer": "Sam Smith", "technician": tom, "service": "boiler service", "start": format!("{day} 15:00"), "zone": "Europe/Berlin", "duration_minutes": 60}),
        ),
        (
            "create_booking",
            create(
                d["start"]["local"].as_str().unwrap_or_default(),
                json!("Europe/Berlin"),
            ),
        ),
        (
            "update_booking",
            json!({"booking": d["booking"], "version": d["version"], "start": "2025-01-07 10:00", "zone": "Europe/Berlin"}),
        ),
        (
            "update_booking",
            json!({"booking": d["booking"], "version": d["version"], "start": gap, "zone": "Europe/Berlin"}),
        ),
        (
            "reschedule_booking",
            json!({"booking": s.confirmed["booking"], "version": s.confirmed["version"], "start": fold, "zone": "Europe/Berlin"}),
        ),
        (
            "reschedule_booking",
            json!({"booking": s.confirmed["booking"], "version": s.confirmed["version"], "start": "2025-01-07 10:00", "zone": "Europe/Berlin"}),
        ),
    ]
}

fn quote_and_other_calls(s: &Seeded) -> Vec<(&'static str, Value)> {
    let (ada, q) = (&s.ada, &s.quote);
    vec![
        ("get_quote", json!({"quote": q["quote"]})),
        ("get_quote", json!({"quote": "quo_0000000000000000000X"})),
        ("find_quotes", json!({"customer": ada})),
        ("find_quotes", json!({"state": "pending"})),
        (
            "create_quote",
            json!({"customer": ada, "lines": [{"description": "Boiler service", "quantity": "1", "unit_price": "120.00"}]}),
        ),
        (
            "create_quote",
            json!({"customer": ada, "lines": [{"description": "Valve", "quantity": 2, "unit_price": 19.99}]}),
        ),
        ("create_quote", json!({"customer": ada})),
        (
            "update_quote",
            json!({"quote": q["quote"], "version": "000000000000", "lines": [{"description": "Valve", "quantity": "1", "unit_price": "20.00"}]}),
        ),
        (
            "send_quote",
            json!({"quote": q["quote"], "version": q["version"]}),
        ),
        (
            "page_technician",
            json!({"technician": "Tom Weber", "message": "Customer waiting at the door"}),
        ),
        (
            "page_technician",
            json!({"technician": "tec_0000000000000000000X", "message": "x"}),
        ),
        ("list_recent_changes", json!({})),
        ("list_recent_changes", json!({"scope": "everything"})),
        (
            "confirm_action",
            json!({"confirm_token": "bogus", "confirm_summary": "x"}),
        ),
        ("confirm_action", json!({"confirm_token": "bogus"})),
        ("reject_action", json!({"confirm_token": "bogus"})),
        (
            "delete_customer",
            json!({"customer": "cus_0000000000000000000X"}),
        ),
    ]
}

async fn follow_hints(world: World) {
    let seeded = seed(&world).await;
    let mut report = Vec::new();
    let mut summary = String::new();
    for toolset in [Toolset::Core, Toolset::Standard, Toolset::Full] {
        let (_, token) = world.connect("acme", "ana", toolset).await;
        let client = world.client(&token);
        let mut follower = Follower::new(&client).await;
        for (tool, args) in starting_calls(&seeded) {
            follower.start(tool, args).await;
        }
        let c = &follower.counts;
        summary.push_str(&format!(
            "hint follower ({}, {}): {} starting calls ({} to listed tools), {} calls, {} suggestions followed, {} error answers ({} leading on, {} handed over), {} dead ends, {} invalid, {} placeholders, {} loops\n",
            world.backend.name(), toolset.as_str(), c.starts, c.starts_listed, c.calls, c.followed, c.errors, c.leading_on, c.handovers, c.dead_ends, c.invalid, c.placeholders, c.loops
        ));
        assert!(
            c.starts_listed >= 50,
            "{} starting calls to listed tools",
            c.starts_listed
        );
        report.extend(
            follower
                .findings
                .iter()
                .map(|f| format!("[{}] {f}", toolset.as_str())),
        );
    }
    // Nor does any audit row written along the way.
    let audit = crate::support::audit_rows(world.app.store.as_ref(), "acme", None, 500).await;
    let rows = format!("{audit:?}");
    for secret in crate::support::hint_follower::SECRETS {
        if rows.contains(secret) {
            report.push(format!("secret: an audit row holds {secret:?}"));
        }
    }
    eprint!("{summary}");
    // tests/run prints these files after the run, since the harness hides passing output.
    let file = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("conformance-hints-{}.txt", world.backend.name()));
    let _ = std::fs::write(file, &summary);
    assert!(
        report.is_empty(),
        "{} findings:\n{}",
        report.len(),
        report.join("\n")
    );
}
on_every_backend!(followed, follow_hints);
