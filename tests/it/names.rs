//! Names where handles belong (issue 14, defect 10): an exact, unique customer or technician
//! name resolves to its handle, for reads and writes alike, and the result says so; the replay
//! digest covers the handle it resolved to; several records of that name answer with the
//! candidates and change nothing; a partial name resolves to nothing and says what to search.
//! Through MCP on SQLite and the local DynamoDB server.

use serde_json::json;

use crate::booking_tools::{draft, seeded_customer, seeded_technician, setup};
use crate::support::on_every_backend;
use crate::world::World;

async fn bookings(world: &World) -> usize {
    crate::support::store::bookings_held(world.app.store.as_ref(), "acme").await
}

async fn an_exact_unique_name_stands_for_its_handle(world: World) {
    let (c, _) = setup(&world).await;
    let ada = seeded_customer(&world, "acme", "Ada Lovelace", "ada@example.com").await;
    let tom = seeded_technician(&world, "acme", "Tom Weber", "Europe/Berlin").await;
    // A read.
    let read = c
        .call_tool("get_customer", json!({"customer": "Ada Lovelace"}))
        .await;
    assert!(!read.is_error(), "{}", read.text());
    assert_eq!(read.structured()["customer"]["customer"], ada);
    let warning = read.structured()["warnings"][0].as_str().unwrap();
    assert!(
        warning.contains(&ada) && warning.contains("Ada Lovelace"),
        "{warning}"
    );
    let slots = c
        .call_tool(
            "find_available_slots",
            json!({"technician": "tom weber", "date": "2055-06-07", "duration_minutes": 60}),
        )
        .await;
    assert!(!slots.is_error(), "{}", slots.text());
    // A write, with both names; its replay is the same call made with the handles.
    let args = json!({"customer": "Ada Lovelace", "technician": "Tom Weber", "service": "boiler service", "start": "2055-06-07 09:00", "zone": "Europe/Berlin", "duration_minutes": 90});
    let created = c.call_tool("create_booking", args).await;
    assert!(!created.is_error(), "{}", created.text());
    let b = &created.structured()["booking"];
    assert_eq!(
        (&b["customer"], &b["technician"]),
        (&json!(ada), &json!(tom))
    );
    assert_eq!(
        created.structured()["warnings"].as_array().unwrap().len(),
        2
    );
    let again = c
        .call_tool("create_booking", draft(&ada, &tom, "2055-06-07 09:00"))
        .await;
    assert_eq!(again.structured()["replayed"], true, "{}", again.text());
    assert_eq!(bookings(&world).await, 1);
}
on_every_backend!(unique, an_exact_unique_name_stands_for_its_handle);

async fn an_ambiguous_or_partial_name_changes_nothing(world: World) {
    let (c, _) = setup(&world).await;
    let tom = seeded_technician(&world, "acme", "Tom Weber", "Europe/Berlin").await;
    seeded_customer(&world, "acme", "Grace Hopper", "grace@example.com").await;
    let second = c
        .call_tool(
            "create_customer",
            json!({"name": "Grace Hopper", "email": "g.hopper@example.com"}),
        )
        .await;
    assert!(!second.is_error(), "{}", second.text());
    let audit_before = crate::support::audit_rows(world.app.store.as_ref(), "acme", None, 100)
        .await
        .len();
    let ambiguous = c
        .call_tool(
            "create_booking",
            draft("Grace Hopper", &tom, "2055-06-07 09:00"),
        )
        .await;
    let s = ambiguous.structured();
    assert_eq!(s["code"], "validation", "{}", ambiguous.text());
    let candidates = s["candidates"].as_array().unwrap();
    assert_eq!(candidates.len(), 2);
    assert!(
        candidates
            .iter()
            .all(|c| c["handle"].as_str().unwrap().starts_with("cus_"))
    );
    // Partial: never resolved, not even for a write; the search to run is named.
    let partial = c
        .call_tool("create_booking", draft("Grace", &tom, "2055-06-07 09:00"))
        .await;
    assert_eq!(
        partial.structured()["code"],
        "not_found",
        "{}",
        partial.text()
    );
    assert_eq!(
        partial.structured()["next_call"],
        "find_customers {\"query\":\"Grace\"}"
    );
    assert_eq!(bookings(&world).await, 0, "nothing was booked");
    let audit_after = crate::support::audit_rows(world.app.store.as_ref(), "acme", None, 100)
        .await
        .len();
    assert_eq!(audit_after, audit_before, "nothing was written");
}
on_every_backend!(ambiguous, an_ambiguous_or_partial_name_changes_nothing);

/// Two customers of one name, kept first and last among sixty whose names merely contain it
/// (their ids sort in the order they were made): the name is still ambiguous, since every
/// namesake is looked for, not the first fifty matches of a search, and nothing is booked.
async fn namesakes_far_apart_among_near_matches_stay_ambiguous(world: World) {
    let (c, _) = setup(&world).await;
    let tom = seeded_technician(&world, "acme", "Tom Weber", "Europe/Berlin").await;
    let ids = std::sync::Arc::new(crate::support::CountingRandomness::default());
    let customers = booking::Customers::new(world.app.store.clone()).with_randomness(ids);
    let names = std::iter::once("Ann".to_owned())
        .chain((0..60).map(|n| format!("Joanna {n}")))
        .chain(std::iter::once("Ann".to_owned()));
    for (n, name) in names.enumerate() {
        let new = booking::NewCustomer {
            name,
            email: format!("c{n}@example.com"),
            phone: None,
            address: None,
            notes: None,
        };
        let change = customers.create(&crate::booking_tools::owner("acme"), new, None);
        change
            .unwrap()
            .commit(world.app.store.as_ref(), vec![])
            .await
            .unwrap();
    }
    let ambiguous = c
        .call_tool("create_booking", draft("Ann", &tom, "2055-06-07 09:00"))
        .await;
    let s = ambiguous.structured();
    assert_eq!(s["code"], "validation", "{}", ambiguous.text());
    assert_eq!(s["candidates"].as_array().unwrap().len(), 2, "{s}");
    assert_eq!(bookings(&world).await, 0, "nothing was booked");
}
/// On SQLite only: the 62 customers are as many writes on the local DynamoDB server, which
/// every test shares; the lookup it checks is the product's, the same on every backend.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namesakes_far_apart_among_near_matches_stay_ambiguous_on_sqlite() {
    let world = World::on(crate::support::store::Backend::Sqlite).await;
    namesakes_far_apart_among_near_matches_stay_ambiguous(world.expect("SQLite is always there"))
        .await;
}
