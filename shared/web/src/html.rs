//! The HTML every page shares: the frame and its style, responses, redirects and the CSRF
//! field of a form.

use accounts::Session;
use http::{HeaderValue, StatusCode, header};

use maud::{DOCTYPE, Markup, PreEscaped};

use crate::{WebResponse, respond};

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;color:#222}\
    .box{border:1px solid #ccc;border-radius:6px;padding:1rem;margin:1rem 0}.muted{color:#666}\
    button{padding:.4rem 1rem;margin-right:.5rem}pre{white-space:pre-wrap;background:#f6f6f6;padding:.5rem}\
    table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.3rem;text-align:left;vertical-align:top}\
    .scroll{overflow-x:auto}dt{font-weight:600;margin-top:.4rem}dd{margin:0 0 0 1rem}dd pre{margin:.2rem 0}\
    @media (max-width:40rem){body{margin:1rem auto}button{display:block;width:100%;margin:.4rem 0;padding:.7rem}td,th{font-size:.9rem}\
    table.stack tr{display:block;border-bottom:1px solid #ccc;padding:.4rem 0}table.stack td{display:block;border:0;padding:.1rem 0}\
    table.stack tr:first-child{display:none}}";

fn page(title: &str, body: Markup) -> String {
    maud::html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · gatehouse" }
                style { (PreEscaped(STYLE)) }
            }
            body {
                p.muted { a href="/app/" { "gatehouse" } }
                h1 { (title) }
                (body)
            }
        }
    }
    .into_string()
}

/// A page: `body` inside the frame, every value in it escaped by `maud`.
pub(crate) fn html(status: StatusCode, title: &str, body: Markup) -> WebResponse {
    respond(status, "text/html; charset=utf-8", page(title, body))
}

/// A page whose body is one paragraph of text.
pub(crate) fn message(status: StatusCode, title: &str, text: &str) -> WebResponse {
    html(status, title, maud::html! { p { (text) } })
}

/// A page naming why an identity change was refused, with the status that says whose it was:
/// the form's (400, also a request the store can never take), the member's rights (403), a
/// record gone (404) or the store (503, logged: the page says only that the store failed).
pub(crate) fn refused(title: &str, e: &identity::IdentityError) -> WebResponse {
    let status = match e {
        identity::IdentityError::Invalid(_)
        | identity::IdentityError::Store(store::StoreError::Invalid(_)) => StatusCode::BAD_REQUEST,
        identity::IdentityError::Forbidden(_) => StatusCode::FORBIDDEN,
        identity::IdentityError::NotFound(_) => StatusCode::NOT_FOUND,
        identity::IdentityError::Store(error) => {
            tracing::error!(%error, page = title, "a page's change failed in the store");
            StatusCode::SERVICE_UNAVAILABLE
        }
    };
    message(status, title, &e.to_string())
}

pub(crate) fn redirect(to: &str) -> WebResponse {
    let mut r = respond(StatusCode::SEE_OTHER, "text/plain", "");
    if let Ok(v) = HeaderValue::from_str(to) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r
}

pub(crate) fn csrf_field(s: &Session) -> Markup {
    maud::html! { input type="hidden" name="csrf" value=(s.csrf); }
}

/// A stored RFC 3339 time as a person in `zone` reads it (`Wed 2 Dec 2026, 14:05 CET (5
/// minutes ago)`); text that is no time is shown as it is.
pub(crate) fn when(text: &str, zone: &str, now: chrono::DateTime<chrono::Utc>) -> String {
    chrono::DateTime::parse_from_rfc3339(text).map_or_else(
        |_| text.to_owned(),
        |t| outside::when::in_words(t.to_utc(), zone, now),
    )
}
