//! Text a model can trust (issue 14, defect 7): a search says how many it shows and whether
//! more match; a preview says what *would* happen and shows nothing as done; the core toolset
//! lists short descriptions (tests/it/manifest.rs checks those against the core limit).

use serde_json::json;

use crate::booking_tools::{confirm, draft, seeded_customer, seeded_technician, setup};
use crate::support::on_every_backend;
use crate::world::World;

async fn searches_say_whether_more_match(world: World) {
    let (c, _) = setup(&world).await;
    let ada = seeded_customer(&world, "acme", "Ada Lovelace", "ada@example.com").await;
    seeded_customer(&world, "acme", "Ada Byron", "byron@example.com").await;
    let tom = seeded_technician(&world, "acme", "Tom Weber", "Europe/Berlin").await;
    for start in ["2055-06-07 09:00", "2055-06-08 09:00", "2055-06-09 09:00"] {
        let created = c
            .call_tool("create_booking", draft(&ada, &tom, start))
            .await;
        assert!(!created.is_error(), "{}", created.text());
    }
    let one = c.call_tool("find_bookings", json!({"limit": 1})).await;
    let s = one.structured();
    assert_eq!(s["bookings"].as_array().unwrap().len(), 1);
    assert_eq!(s["more"], true);
    let summary = s["summary"].as_str().unwrap();
    assert!(
        summary.contains("first booking") && summary.contains("more match"),
        "{summary}"
    );
    let all = c.call_tool("find_bookings", json!({"limit": 3})).await;
    assert_eq!(all.structured()["more"], false);
    assert_eq!(all.structured()["summary"], "3 bookings match.");
    let customers = c
        .call_tool("find_customers", json!({"query": "ada", "limit": 1}))
        .await;
    assert_eq!(customers.structured()["more"], true, "{}", customers.text());
    let recent = c
        .call_tool("list_recent_changes", json!({"limit": 2}))
        .await;
    assert_eq!(recent.structured()["more"], true, "{}", recent.text());
    assert_eq!(recent.structured()["changes"].as_array().unwrap().len(), 2);
}
on_every_backend!(counts, searches_say_whether_more_match);

async fn a_preview_shows_nothing_as_done(world: World) {
    let (c, _) = setup(&world).await;
    let ada = seeded_customer(&world, "acme", "Ada Lovelace", "ada@example.com").await;
    let tom = seeded_technician(&world, "acme", "Tom Weber", "Europe/Berlin").await;
    let b = crate::booking_tools::confirmed_booking(&c, &ada, &tom, "2055-06-07 09:00").await;
    let preview = c
        .call_tool(
            "cancel_booking",
            json!({"booking": b["booking"], "version": b["version"]}),
        )
        .await;
    let s = preview.structured();
    assert_eq!(s["status"], "PREVIEW");
    assert!(
        s.get("booking").is_none() && s.get("notified").is_none(),
        "nothing at the top reads as done: {s}"
    );
    assert_eq!(s["if_confirmed"]["booking"]["state"], "cancelled");
    assert_eq!(s["if_confirmed"]["notified"], json!(["ada@example.com"]));
    assert!(
        s["summary"]
            .as_str()
            .unwrap()
            .starts_with("Prepared, not done yet")
    );
    let read = c
        .call_tool("get_booking", json!({"booking": b["booking"]}))
        .await;
    assert_eq!(read.structured()["booking"]["state"], "confirmed");
    let done = confirm(&c, &preview).await;
    assert_eq!(done.structured()["booking"]["state"], "cancelled");
    assert_eq!(done.structured()["notified"], json!(["ada@example.com"]));
}
on_every_backend!(previews, a_preview_shows_nothing_as_done);
