//! The booking product's one error type. Every variant names what the caller can do about it.

/// What went wrong in a booking service.
#[derive(Debug, thiserror::Error)]
pub enum BookingError {
    /// No such object in this tenant (another tenant's objects are never "found").
    #[error("no {kind} {id} in this workspace")]
    NotFound {
        /// `customer`, `booking`, ...
        kind: &'static str,
        /// The public id asked for.
        id: String,
    },
    /// An input is wrong.
    #[error("{field}: {reason}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// Why, and what is accepted.
        reason: String,
    },
    /// An object with the same business key exists.
    #[error("a {kind} with this {key} exists already: {existing}")]
    Duplicate {
        /// `customer`, `booking`.
        kind: &'static str,
        /// What makes it the same (`email`).
        key: &'static str,
        /// The existing object's public id.
        existing: String,
    },
    /// The object changed since the caller read it.
    #[error("the {kind} changed since version {expected}")]
    Stale {
        /// `customer`, `booking`.
        kind: &'static str,
        /// The version the caller sent.
        expected: String,
        /// The current state, presented.
        current: serde_json::Value,
    },
    /// The acting member lacks a right.
    #[error("this needs the right {right}")]
    Forbidden {
        /// The right.
        right: &'static str,
    },
    /// A time is wrong: nonexistent, ambiguous, unreadable or without a zone.
    #[error("{field}: {error}")]
    Time {
        /// The field.
        field: &'static str,
        /// What is wrong, with the options where there are some.
        error: crate::time::TimeError,
    },
    /// An amount, quantity or tax rate is wrong.
    #[error("{field}: {error}")]
    Money {
        /// The field.
        field: &'static str,
        /// What is wrong.
        error: crate::money::MoneyError,
    },
    /// A batch's filter matches another number of records than the caller expected, so
    /// nothing is done: a batch never acts on more (or fewer) records than the caller saw.
    #[error("the filter matches {found} open {kind}s, not {}; nothing was done", .expected.map_or("an unstated number".to_owned(), |n| n.to_string()))]
    CountMismatch {
        /// `booking`.
        kind: &'static str,
        /// How many the caller expected (`None`: it did not say).
        expected: Option<u32>,
        /// How many match.
        found: usize,
        /// The public ids of the matches.
        matches: Vec<String>,
    },
    /// A booking's start lies in the past: it is not booked, moved there, or confirmed to a
    /// customer (ADR 17).
    #[error("{field} {} is in the past ({})", .start.local, .start.from_now)]
    Past {
        /// The field (`start`), or `booking` when a stored booking's start has passed.
        field: &'static str,
        /// The start, presented.
        start: crate::time::Moment,
        /// The same local time on the next date ahead with that month and day, when the
        /// caller sent a local time (a mistyped year is the usual cause).
        next_year: Option<String>,
    },
    /// The technician has another open booking at that time (ADR 46).
    #[error("technician {technician} is booked from {} to {} ({}) by {other} at that time", .from.local, .until.local, .from.zone)]
    Busy {
        /// The technician's handle.
        technician: String,
        /// The booking in the way.
        other: String,
        /// Its start, presented.
        from: Box<crate::time::Moment>,
        /// Its end.
        until: Box<crate::time::Moment>,
        /// The local day of the time asked for, for a search of free times.
        day: String,
        /// The length asked for, in minutes.
        minutes: i64,
    },
    /// A business rule refuses the change.
    #[error("{0}")]
    Rejected(String),
    /// The store failed.
    #[error("store failure")]
    Store(#[from] store::StoreError),
}

impl BookingError {
    pub(crate) fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        BookingError::Invalid {
            field,
            reason: reason.into(),
        }
    }
}
