//! The pages of a product's records (ADR 49), the pages tool results link to:
//! `/app/<path>/<handle>` for each of the product's record kinds. The product reads the record
//! with the signed-in member's live rights; the platform renders its typed attributes (times
//! in the workspace's zone, text a third party wrote marked as such). A handle of another kind,
//! or of another workspace, is not found.

use accounts::Session;
use http::StatusCode;
use mcp_pipeline::records::{AttributeValue, Reader, Record, RecordError, RecordKind, Records};

use crate::html::{html, message};
use crate::session::rights;
use crate::{Web, WebResponse};

/// The page at `path` when it names a record of `records`'s kinds; `None` when no kind's
/// pages are there.
pub(crate) async fn page(
    web: &Web,
    records: &dyn Records,
    s: &Session,
    path: &str,
) -> Option<WebResponse> {
    let (segment, handle) = path.strip_prefix("/app/")?.split_once('/')?;
    let kind = records.kinds().iter().find(|k| k.path == segment)?;
    let Some(id) = kind.id_of(handle) else {
        return Some(not_found());
    };
    let reader = Reader {
        tenant: s.tenant.clone(),
        member: s.member.clone(),
        rights: rights(web, s).await,
    };
    Some(match records.read(&reader, kind, id).await {
        Ok(record) => shown(web, s, kind, handle, &record).await,
        Err(RecordError::Forbidden { right }) => html(
            StatusCode::FORBIDDEN,
            "Not allowed",
            maud::html! { p { "Seeing this needs the right " code { (right) } "." } },
        ),
        Err(RecordError::NotFound) => not_found(),
        Err(RecordError::Unavailable) => message(
            StatusCode::SERVICE_UNAVAILABLE,
            "Try again",
            "The record could not be read just now. Reload the page in a moment.",
        ),
    })
}

/// The record's attributes in its kind's order, as the workspace's people read them.
async fn shown(
    web: &Web,
    s: &Session,
    kind: &'static RecordKind,
    handle: &str,
    record: &Record,
) -> WebResponse {
    if let Err(mistake) = record.check(kind) {
        tracing::error!(%mistake, kind = kind.noun, "a record does not match its kind");
        return message(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Cannot be shown",
            "This record cannot be shown: the product described it wrongly (logged).",
        );
    }
    let zone = accounts::workspaces::zone(web.store.as_ref(), &s.tenant).await;
    let rows: Vec<(String, String)> = kind
        .attributes
        .iter()
        .map(|a| {
            let label = if a.third_party {
                format!("{} (written outside the workspace)", a.label)
            } else {
                a.label.to_owned()
            };
            let value = record
                .values
                .get(a.name)
                .map(|v| text_of(v, &zone))
                .unwrap_or_default();
            (label, value)
        })
        .collect();
    let mut title = kind.noun.to_owned();
    if let Some(first) = title.get_mut(..1) {
        first.make_ascii_uppercase();
    }
    html(
        StatusCode::OK,
        &format!("{title} {handle}"),
        maud::html! { div.scroll { table {
            @for (label, value) in &rows { tr { th { (label) } td { (value) } } }
        } } },
    )
}

/// A value as text: a time in `zone` (`Wed 2026-12-02 14:05 CET`).
fn text_of(value: &AttributeValue, zone: &str) -> String {
    match value {
        AttributeValue::String(s) => s.clone(),
        AttributeValue::Integer(n) => n.to_string(),
        AttributeValue::Decimal(d) => d.to_string(),
        AttributeValue::DateTime(t) => match zone.parse::<chrono_tz::Tz>() {
            Ok(tz) => t
                .with_timezone(&tz)
                .format("%a %Y-%m-%d %H:%M %Z")
                .to_string(),
            Err(_) => t.format("%a %Y-%m-%d %H:%M UTC").to_string(),
        },
    }
}

fn not_found() -> WebResponse {
    message(
        StatusCode::NOT_FOUND,
        "Not found",
        "There is no such record in this workspace.",
    )
}
