//! From MCP to the services and back: the actor from the caller, the change into the
//! pipeline's writes, service errors into errors the model can act on.

use booking::{
    Actor, Alerts, BookingError, Bookings, Change, Customers, Quotes, Technicians, When,
};
use mcp_pipeline::{
    CallError, Choice, Effect, ErrorKind, HandleKind, ToolContext, ToolError, TwoStepWrites, Writes,
};

/// The services the tools call.
#[derive(Debug, Clone)]
pub struct Services {
    /// Customers.
    pub customers: Customers,
    /// Technicians.
    pub technicians: Technicians,
    /// Bookings.
    pub bookings: Bookings,
    /// Quotes.
    pub quotes: Quotes,
    /// Alert rules.
    pub alerts: Alerts,
    /// Base URL of the product's pages, for console links.
    pub console_base: String,
}

// Handle prefixes and nouns are the product's (`booking::ids::Kind`), defined once there.

impl Services {
    /// The product's notifying writes on these services.
    pub(crate) fn use_cases(&self) -> booking::UseCases {
        booking::UseCases {
            customers: self.customers.clone(),
            technicians: self.technicians.clone(),
            bookings: self.bookings.clone(),
            quotes: self.quotes.clone(),
        }
    }
}

/// Customer handles (`cus_...`).
#[derive(Debug)]
pub struct CustomerKind;

impl HandleKind for CustomerKind {
    const PREFIX: &'static str = booking::ids::Kind::Customer.prefix();
    const NOUN: &'static str = booking::ids::Kind::Customer.noun();
}

/// Booking handles (`bkg_...`).
#[derive(Debug)]
pub struct BookingKind;

impl HandleKind for BookingKind {
    const PREFIX: &'static str = booking::ids::Kind::Booking.prefix();
    const NOUN: &'static str = booking::ids::Kind::Booking.noun();
}

/// Quote handles (`quo_...`).
#[derive(Debug)]
pub struct QuoteKind;

impl HandleKind for QuoteKind {
    const PREFIX: &'static str = booking::ids::Kind::Quote.prefix();
    const NOUN: &'static str = booking::ids::Kind::Quote.noun();
}

/// Technician handles (`tec_...`).
#[derive(Debug)]
pub struct TechnicianKind;

impl HandleKind for TechnicianKind {
    const PREFIX: &'static str = booking::ids::Kind::Technician.prefix();
    const NOUN: &'static str = booking::ids::Kind::Technician.noun();
}

/// A start time as a tool takes it (the product's one reading of starts).
pub(crate) fn when(start: &str, zone: &str) -> When {
    When::from_input(start, zone)
}

/// The reason a deliberate duplicate (`what`) is made, when `separate` asks for one: `separate`
/// needs a `reason`, and a `reason` without `separate` is refused rather than ignored (the
/// caller may have meant a duplicate and would get a refusal as a duplicate instead).
pub(crate) fn separate_reason<'a>(
    separate: Option<bool>,
    reason: Option<&'a str>,
    what: &str,
) -> Result<Option<&'a str>, CallError> {
    let reason = reason.filter(|r| !r.trim().is_empty());
    match (separate.unwrap_or(false), reason) {
        (true, Some(reason)) => Ok(Some(reason)),
        (false, None) => Ok(None),
        (true, None) => Err(ToolError::validation(
            "`separate` needs a `reason`",
            format!("Say why {what} is needed"),
        )
        .handover(format!(
            "Ask the user why {what} is needed, and send that as `reason`"
        ))
        .detail("field", "reason")
        .into()),
        (false, Some(_)) => Err(ToolError::validation(
            "`reason` is read only with `separate: true`",
            format!(
                "Leave `reason` out, or send `separate: true` with it to make {what} on purpose"
            ),
        )
        .handover(format!(
            "Ask the user whether they mean {what} on purpose: if so, send `separate: true` with this reason; if not, send the call without `reason`"
        ))
        .detail("field", "reason")
        .into()),
    }
}

/// The acting member: the connection's creator with the connection's live rights.
pub(crate) fn actor<E: Effect>(ctx: &ToolContext<E>) -> Result<Actor, CallError> {
    let caller = ctx.exec.caller.as_ref().ok_or_else(|| {
        CallError::Tool(ToolError::new(
            ErrorKind::Forbidden,
            "This tool acts in a workspace and needs an authenticated connection",
            "Connect with an MCP token",
        ))
    })?;
    Ok(Actor {
        tenant: caller.tenant.clone(),
        member: caller.creator.clone(),
        rights: caller.rights.clone(),
    })
}

/// A record that is not there, with the tool that lists that kind of record (no argument
/// needed: it lists the most relevant first).
fn not_found(kind: &str, id: String) -> ToolError {
    let search = match kind {
        "customer" => Some("find_customers {}"),
        "booking" => Some("find_bookings {}"),
        "technician" => Some("list_technicians {}"),
        "quote" => Some("find_quotes {}"),
        _ => None,
    };
    let error = ToolError::new(
        ErrorKind::NotFound,
        format!("There is no {kind} {id} in this workspace"),
        match search {
            Some(_) => format!("List the {kind}s, pick the right one and use its handle"),
            None => format!("Tell the user: the {kind} is not set up; an administrator sets it up"),
        },
    )
    .detail("id", id);
    match search {
        Some(call) => error.next_call(call),
        None => error.handover(format!(
            "The {kind} is not set up in this workspace; an administrator sets it up"
        )),
    }
}

/// A service error as the model should see it: its cause, and the call that fixes it or
/// what to ask the user.
pub(crate) fn error(e: BookingError) -> CallError {
    let tool_error = match e {
        BookingError::NotFound { kind, id } => not_found(kind, id),
        BookingError::Invalid { field, reason } => ToolError::validation(format!("`{field}`: {reason}"), format!("Correct `{field}` and call again"))
            .handover(format!("`{field}` {reason}; ask the user for the right value"))
            .detail("field", field),
        BookingError::Duplicate { kind, key, existing } => ToolError::new(
            ErrorKind::Conflict,
            format!("A {kind} with this {key} exists already: {existing}"),
            format!("Change the existing {kind} instead; to create a second one anyway, send separate: true with a reason"),
        )
        .next_call(format!("get_{kind} {{\"{kind}\": \"{existing}\"}}"))
        .detail("existing", existing),
        BookingError::Stale { kind, expected, current } => stale(kind, &expected, current),
        BookingError::Forbidden { right } => ToolError::new(ErrorKind::Forbidden, format!("This needs the right {right}"), "Ask a person who has that right")
            .handover(format!("The member behind this connection lacks the right {right}; someone who has it can do this")),
        BookingError::Time { field, error } => crate::time_errors::lead_on(field, error),
        BookingError::Money { field, error } => {
            let details = serde_json::to_value(&error).unwrap_or_default();
            ToolError::validation(format!("`{field}`: {error}"), "Send amounts and quantities as decimal strings like \"19.99\", never as floating-point numbers")
                .handover(format!("`{field}`: {error}; ask the user for the amount if the conversation does not say it"))
                .detail("field", field)
                .detail("money_error", details)
        }
        BookingError::CountMismatch { kind, expected, found, matches } => count_mismatch(kind, expected, found, matches),
        BookingError::Past { field, start, next_year } => crate::time_errors::past(field, &start, next_year),
        BookingError::Busy { ref technician, ref other, ref day, minutes, .. } => {
            let refused = ToolError::new(ErrorKind::Conflict, e.to_string(), "Pick a time the technician is free; nothing was booked")
                .handover(format!("{e}; ask the user for another time, or whether that booking should move"))
                .detail("existing", other.clone());
            // The free times of that day, for a visit find_available_slots can place (a
            // longer one is the user's to place).
            if (15..=booking::time::LONGEST_SEARCHED_VISIT_MINUTES).contains(&minutes) {
                let search = serde_json::json!({"technician": technician, "date": day, "duration_minutes": minutes});
                refused.next_call(format!("find_available_slots {search}"))
            } else {
                refused
            }
        }
        BookingError::Rejected(reason) => ToolError::new(ErrorKind::Rejected, reason.clone(), "Read the current state and decide with the user")
            .handover(format!("{reason}: tell the user and decide together")),
        // An outage is the caller's to retry; anything else the store says is a bug here.
        BookingError::Store(e) if e.is_retryable() => ToolError::store_unavailable(),
        BookingError::Store(e) => return CallError::Other(Box::new(e)),
    };
    CallError::Tool(tool_error)
}

/// A batch whose expected count is not what its filter matches. The option to take them all
/// is offered only when one batch can: none matching leaves nothing to cancel, and more than
/// a batch takes must be split by a narrower filter.
fn count_mismatch(
    kind: &str,
    expected: Option<u32>,
    found: usize,
    matches: Vec<String>,
) -> ToolError {
    let message = match expected {
        Some(expected) => {
            format!("The filter matches {found} open {kind}s, not {expected}; nothing was done")
        }
        None => format!(
            "`expected_count` is required: the filter matches {found} open {kind}s; nothing was done"
        ),
    };
    let most = booking::bookings::MOST_CANCELLED_AT_ONCE as usize;
    let error = ToolError::new(
        ErrorKind::Rejected,
        message,
        "Check the matches listed below with the user, then send the right expected_count or a narrower filter",
    );
    let error = match found {
        0 => error.handover(format!("Tell the user that no open {kind} matches; nothing is left to cancel")),
        n if n > most => error.handover(format!("Show the user the {n} matches: at most {most} are cancelled at once, so ask which to cancel first (a narrower filter)")),
        n => error
            .handover(format!("Show the user the {n} matches; if they mean all of them, the option sends expected_count {n}"))
            .option(Choice::set(format!("all {n} matches"), "expected_count", n)),
    };
    error.detail("matches", matches)
}

/// The record changed since the caller read it: the re-read, with the current state.
fn stale(kind: &str, expected: &str, current: serde_json::Value) -> ToolError {
    let reread = current
        .get(kind)
        .and_then(serde_json::Value::as_str)
        .map(|handle| format!("get_{kind} {}", serde_json::json!({ kind: handle })));
    let version = current
        .get("version")
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned);
    let mut error = ToolError::new(
        ErrorKind::Conflict,
        format!("The {kind} changed since version {expected} was read"),
        format!("Read the {kind} again and apply the change to its current version"),
    )
    .detail("current", current);
    // The retry is offered, not named as the next call: it is right only when the change
    // since was this conversation's own, which the re-read shows.
    if let Some(version) = version {
        error = error.option(Choice::set(
            format!("the same change on version {version}, if the change since was this conversation's own"),
            "version",
            version,
        ));
    }
    match reread {
        Some(call) => error.next_call(call),
        None => error.handover(format!("The {kind} changed meanwhile; tell the user")),
    }
}

/// Hands a planned change to the pipeline, which commits it with the gates, and returns its
/// value; names the ids it touches.
pub(crate) fn apply<T>(writes: &Writes, change: Change<T>) -> T {
    for op in change.ops {
        let explain = op.on_conflict;
        writes.push_or(op.op, move |current| match error(explain(current)) {
            CallError::Tool(e) => e,
            other => ToolError::new(ErrorKind::Internal, format!("{other:?}"), "Try again"),
        });
    }
    for id in change.ids {
        writes.touch(id);
    }
    change.value
}

/// The same for a two-step tool's change, naming who its messages go to.
pub(crate) fn apply_sending<T>(writes: &TwoStepWrites, mut change: Change<T>) -> T {
    // Messages that do not count against their recipients' limit leave the call counted per
    // record, as a tool that names no recipient is.
    if change.counted {
        for recipient in std::mem::take(&mut change.notified) {
            writes.notify(recipient);
        }
    }
    apply(writes, change)
}

/// The call's time, from the server's clock (so that tests can set it).
pub(crate) fn now<E: Effect>(ctx: &ToolContext<E>) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::from_timestamp(ctx.exec.now, 0).unwrap_or_default()
}
