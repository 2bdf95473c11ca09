//! Time: turning what a caller sends into instants, and presenting instants back.
//!
//! Callers send either a local date-time plus an IANA zone (`2026-06-01 09:00` in
//! `Europe/Berlin`) or an ISO 8601 / RFC 3339 time with an offset (`2026-06-01T09:00:00+02:00`).
//! A time with neither an offset nor a zone is refused, because it names no instant.
//!
//! Local times that do not exist (the clock jumps forward, a DST gap) or exist twice (the clock
//! goes back, a DST fold) are refused with the options to choose from:
//!
//! * **Gap**: the options are the two readings of the local time with the offsets on either side
//!   of the jump, the same as `disambiguation: "earlier"` and `"later"` in TC39 Temporal. For
//!   `2026-03-29 02:30` in `Europe/Berlin` (clocks jump 02:00 → 03:00) they are
//!   `01:30 +01:00` (earlier) and `03:30 +02:00` (later); the error text also names the gap so
//!   that a person can pick the first valid time (03:00) instead.
//! * **Fold**: the options are both instants, earlier first: `2026-10-25 02:30` in
//!   `Europe/Berlin` is `02:30 +02:00` (summer time) or `02:30 +01:00` (winter time).
//!
//! The caller picks by sending the option's `iso` value (to [`parse_instant`]) or the same local
//! time with the offset (to [`parse_local_with_offset`]).
//!
//! Every instant leaves the server as a [`Moment`]: weekday, local time, zone, offset, UTC and the
//! distance from now. Nothing here reads the clock: `now` is always a parameter.
//!
//! Durations are added to instants, never to the wall clock, so a booking of 60 minutes that
//! starts at 01:30 on the night the clocks jump forward ends at 03:30 local time.

use chrono::{
    DateTime, FixedOffset, MappedLocalTime, NaiveDateTime, Offset, SecondsFormat, TimeDelta,
    TimeZone, Timelike, Utc,
};
use chrono_tz::Tz;
use serde::Serialize;

/// The longest visit whose free times are searched for, in minutes (a working day and more).
pub const LONGEST_SEARCHED_VISIT_MINUTES: i64 = 600;

/// The longest booking [`TimeRange`] accepts: 14 days, in minutes.
pub const MAX_DURATION_MINUTES: i64 = 14 * 24 * 60;

/// The earliest calendar year accepted in input; earlier years are almost always typos.
pub const MIN_YEAR: i32 = 1900;

/// The latest calendar year accepted in input.
pub const MAX_YEAR: i32 = 2199;

/// An instant together with the zone it is shown in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resolved {
    /// The instant itself.
    pub instant: DateTime<Utc>,
    /// The zone the instant is shown in (the zone the caller sent, or UTC when none was sent).
    pub zone: Tz,
}

impl Resolved {
    /// Pairs an instant with the zone it is shown in.
    pub fn new(instant: DateTime<Utc>, zone: Tz) -> Self {
        Self { instant, zone }
    }

    /// The instant as a date-time in its zone.
    pub fn local(&self) -> DateTime<Tz> {
        self.instant.with_timezone(&self.zone)
    }

    /// The zone's UTC offset at this instant.
    pub fn offset(&self) -> FixedOffset {
        self.local().offset().fix()
    }

    /// The presenter for this instant.
    pub fn moment(&self, now: DateTime<Utc>) -> Moment {
        Moment::new(self.instant, self.zone, now)
    }

    /// This instant plus `minutes` of elapsed time (across DST correctly), in the same zone.
    pub fn plus_minutes(&self, minutes: i64) -> Result<Self, TimeError> {
        Ok(Self::new(end_after(self.instant, minutes)?, self.zone))
    }
}

/// How an instant is shown to a model or a person.
///
/// Built for one display zone and one `now`; every field is text so that the JSON a client sees
/// is exactly what was computed here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Moment {
    /// English weekday in the display zone, e.g. `Sunday`.
    pub weekday: String,
    /// Local date and time in the display zone, `2026-03-29 03:00` (seconds only when not zero).
    pub local: String,
    /// IANA name of the display zone, e.g. `Europe/Berlin`.
    pub zone: String,
    /// The zone's UTC offset at this instant, e.g. `+02:00`.
    pub offset: String,
    /// Whether the local time occurs twice (the hour repeated when clocks go back): said
    /// without its offset, it would name two instants. Not shown as a field: `offset` is.
    #[serde(skip)]
    pub repeated: bool,
    /// The instant in UTC, RFC 3339 with `Z`, e.g. `2026-03-29T01:00:00Z`.
    pub utc: String,
    /// The instant as RFC 3339 with the zone's offset, e.g. `2026-03-29T03:00:00+02:00`.
    pub iso: String,
    /// Distance from `now`: `in 3 days`, `2 hours ago`, `in 5 minutes`, `now`.
    pub from_now: String,
}

impl Moment {
    /// Presents `instant` in `zone`, with the distance measured from `now`.
    pub fn new(instant: DateTime<Utc>, zone: Tz, now: DateTime<Utc>) -> Self {
        let local = instant.with_timezone(&zone);
        let local_text = if local.second() == 0 && local.nanosecond() == 0 {
            local.format("%Y-%m-%d %H:%M").to_string()
        } else {
            local.format("%Y-%m-%d %H:%M:%S").to_string()
        };
        Self {
            weekday: local.format("%A").to_string(),
            local: local_text,
            zone: zone.name().to_owned(),
            offset: format_offset(local.offset().fix()),
            repeated: matches!(
                zone.from_local_datetime(&local.naive_local()),
                chrono::LocalResult::Ambiguous(..)
            ),
            utc: instant.to_rfc3339_opts(SecondsFormat::AutoSi, true),
            iso: local.to_rfc3339_opts(SecondsFormat::AutoSi, false),
            from_now: from_now(instant, now),
        }
    }

    /// How people are told the time: `Sunday 2055-10-31 02:30 (Europe/Berlin)`, with the offset
    /// when the local time occurs twice that night (`(Europe/Berlin, UTC+01:00)`), so that a
    /// customer and an approver read which of the two it is.
    pub fn spoken(&self) -> String {
        if self.repeated {
            format!(
                "{} {} ({}, UTC{})",
                self.weekday, self.local, self.zone, self.offset
            )
        } else {
            format!("{} {} ({})", self.weekday, self.local, self.zone)
        }
    }

    /// One line for error texts: `Sunday 2026-03-29 01:30 +01:00 (2026-03-29T01:30:00+01:00)`.
    fn summary(&self) -> String {
        format!(
            "{} {} {} ({})",
            self.weekday, self.local, self.offset, self.iso
        )
    }
}

/// A failure to read or combine times. The texts name the cause and the fix; they reach a model.
///
/// Serializes as a JSON object with a `code` field plus the variant's fields, for the details line
/// of a tool error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum TimeError {
    /// The zone is empty, or not an IANA zone name.
    #[error(
        "unknown time zone \"{zone}\"{}; send an IANA zone name such as Europe/Berlin or America/New_York (not an abbreviation like CEST or an offset like +02:00)",
        did_you_mean(.suggestion)
    )]
    UnknownZone {
        /// What was sent.
        zone: String,
        /// A zone with the same name in other letter case, if there is one.
        suggestion: Option<String>,
    },

    /// The local date-time could not be read.
    #[error(
        "cannot read \"{text}\" as a local date-time; send YYYY-MM-DD HH:MM on a 24-hour clock (seconds optional, no offset), e.g. 2055-06-07 09:00, together with an IANA zone"
    )]
    InvalidLocal {
        /// What was sent.
        text: String,
    },

    /// The text with an offset could not be read.
    #[error(
        "cannot read \"{text}\" as a time; send ISO 8601 with an offset, e.g. 2055-06-07T09:00:00+02:00 or 2055-06-07T07:00:00Z, or a local time like 2055-06-07 09:00 together with an IANA zone"
    )]
    InvalidInstant {
        /// What was sent.
        text: String,
    },

    /// The offset could not be read.
    #[error(
        "cannot read \"{offset}\" as a UTC offset; send +HH:MM or -HH:MM, e.g. +02:00, or Z for UTC"
    )]
    InvalidOffset {
        /// What was sent.
        offset: String,
    },

    /// A start whose trailing part reads as a time range as much as an offset: hours alone
    /// (`09:00-11`), or, written with a space and without seconds, an offset the zone does not
    /// have then (`09:00-10:30` in Europe/Berlin). Read as an offset it would book another hour
    /// without a word.
    #[error(
        "\"{text}\" reads as a time range as much as a time with the UTC offset {offset}; send the start alone, as a local time with its zone, and the length in duration_minutes; a time with an offset only as ISO 8601 with T and seconds, when that offset is meant"
    )]
    RangeOrOffset {
        /// What was sent.
        text: String,
        /// The part that would be the offset.
        offset: String,
    },

    /// A time without an offset arrived without a zone.
    #[error(
        "\"{text}\" has no UTC offset and no time zone was given, so it names no instant; send the local time with an IANA zone (e.g. 2055-06-07 09:00 and zone Europe/Berlin) or ISO 8601 with an offset (e.g. 2055-06-07T09:00:00+02:00)"
    )]
    MissingOffset {
        /// What was sent.
        text: String,
    },

    /// The year is outside [`MIN_YEAR`]..=[`MAX_YEAR`].
    #[error(
        "\"{text}\" is outside the supported years {min_year} to {max_year}; check the year and send the date again"
    )]
    OutOfRange {
        /// What was sent.
        text: String,
        /// Earliest year accepted.
        min_year: i32,
        /// Latest year accepted.
        max_year: i32,
    },

    /// The local time falls into a DST gap and does not exist.
    #[error(
        "{local} does not exist in {zone}: the clocks jump from {gap_from} to {gap_to} that day; choose one of {} and send it with its offset, or send a time outside the gap",
        list_options(.options)
    )]
    Nonexistent {
        /// The local time that was sent, `YYYY-MM-DD HH:MM`.
        local: String,
        /// The zone.
        zone: String,
        /// First local time of the gap, e.g. `02:00`.
        gap_from: String,
        /// First local time after the gap, e.g. `03:00`.
        gap_to: String,
        /// The local time read with the offset after the jump (earlier instant) and with the
        /// offset before it (later instant), earlier first.
        options: Vec<Moment>,
    },

    /// The local time falls into a DST fold and exists twice.
    #[error(
        "{local} occurs twice in {zone} because the clocks go back that day; choose {} and send it with its offset",
        list_options(.options)
    )]
    Ambiguous {
        /// The local time that was sent, `YYYY-MM-DD HH:MM`.
        local: String,
        /// The zone.
        zone: String,
        /// Both instants, earlier first.
        options: Vec<Moment>,
    },

    /// An explicit offset does not apply to the local time in the zone.
    #[error(
        "{local} in {zone} has offset {}, not {offset}; send the local time with that offset, or check the date and zone",
        .valid.join(" or ")
    )]
    OffsetMismatch {
        /// The local time that was sent.
        local: String,
        /// The zone.
        zone: String,
        /// The offset that was sent.
        offset: String,
        /// The offsets that local time has in the zone.
        valid: Vec<String>,
    },

    /// A duration outside 1..=[`MAX_DURATION_MINUTES`].
    #[error(
        "a duration of {minutes} minutes is not allowed; send a whole number of minutes from 1 to {max_minutes}"
    )]
    InvalidDuration {
        /// What was sent.
        minutes: i64,
        /// The longest allowed.
        max_minutes: i64,
    },

    /// An end that is not after its start.
    #[error(
        "the end {end} is not after the start {start}; send an end later than the start, or a duration in minutes"
    )]
    EndNotAfterStart {
        /// The start, RFC 3339 UTC.
        start: String,
        /// The end, RFC 3339 UTC.
        end: String,
    },
}

fn did_you_mean(suggestion: &Option<String>) -> String {
    suggestion
        .as_ref()
        .map(|s| format!(" (did you mean {s}?)"))
        .unwrap_or_default()
}

fn list_options(options: &[Moment]) -> String {
    options
        .iter()
        .map(Moment::summary)
        .collect::<Vec<_>>()
        .join(" or ")
}

/// Reads an IANA zone name such as `Europe/Berlin`. Names are case-sensitive; a name that only
/// differs in case is refused with the correct spelling as a suggestion.
pub fn parse_zone(zone: &str) -> Result<Tz, TimeError> {
    let trimmed = zone.trim();
    if let Ok(tz) = trimmed.parse::<Tz>()
        && !reads_as_an_abbreviation(trimmed)
    {
        return Ok(tz);
    }
    let suggestion = if trimmed.is_empty() {
        None
    } else {
        chrono_tz::TZ_VARIANTS
            .iter()
            .find(|tz| tz.name().eq_ignore_ascii_case(trimmed))
            .map(|tz| tz.name().to_owned())
    };
    Err(TimeError::UnknownZone {
        zone: zone.to_owned(),
        suggestion,
    })
}

/// Whether a zone name is one of the database's fixed-offset zones named like a seasonal
/// abbreviation: `EST` is UTC-5 all year, so a New York booking sent as `EST` in July lands an
/// hour late (`EDT` is no zone at all, and is refused as unknown). The database's other short
/// names (`CET`, `GB`, `NZ`) follow their region's daylight saving, as their readers mean.
fn reads_as_an_abbreviation(name: &str) -> bool {
    matches!(name, "EST" | "MST" | "HST")
}

/// Reads a local date-time (`2026-03-29 02:30`, `2026-03-29T02:30`, seconds optional) in an IANA
/// zone.
///
/// Refuses a time in a DST gap with [`TimeError::Nonexistent`] and a time in a DST fold with
/// [`TimeError::Ambiguous`], both with the options (see the module docs). `now` is only used to
/// present those options.
pub fn parse_local(local: &str, zone: &str, now: DateTime<Utc>) -> Result<Resolved, TimeError> {
    let tz = parse_zone(zone)?;
    let naive = parse_naive_local(local)?;
    resolve_local(naive, tz, now)
}

/// Reads a local date-time in an IANA zone together with the offset the caller chose, e.g.
/// `2026-10-25 02:30`, `Europe/Berlin`, `+01:00` for the second 02:30 of that night.
///
/// The offset must be one the zone has at that local time; otherwise
/// [`TimeError::OffsetMismatch`] names the valid ones. A time in a DST gap is refused with its
/// options as in [`parse_local`], whatever the offset.
pub fn parse_local_with_offset(
    local: &str,
    zone: &str,
    offset: &str,
    now: DateTime<Utc>,
) -> Result<Resolved, TimeError> {
    let tz = parse_zone(zone)?;
    let naive = parse_naive_local(local)?;
    let wanted = parse_offset(offset.trim()).ok_or_else(|| TimeError::InvalidOffset {
        offset: offset.to_owned(),
    })?;
    let candidates = readings(tz, naive);
    if candidates.is_empty() {
        return Err(nonexistent(naive, tz, now));
    }
    if let Some(hit) = candidates
        .iter()
        .find(|t| t.offset().fix().local_minus_utc() == wanted.local_minus_utc())
    {
        return Ok(Resolved::new(hit.with_timezone(&Utc), tz));
    }
    Err(TimeError::OffsetMismatch {
        local: format_naive(naive),
        zone: tz.name().to_owned(),
        offset: format_offset(wanted),
        valid: candidates
            .iter()
            .map(|t| format_offset(t.offset().fix()))
            .collect(),
    })
}

/// Reads a time for a field that takes either form, shown in `zone`.
///
/// * With an offset (`2026-06-01T09:00:00+02:00`, `2026-06-01T07:00Z`, `+0200` also
///   read; seconds optional; `T` or a space): the instant is converted into `zone`, or into UTC
///   when `zone` is empty.
/// * Without an offset: read as a local time in `zone` exactly like [`parse_local`] (gaps and
///   folds are refused with options). When `zone` is empty as well the text names no instant
///   and is refused with [`TimeError::MissingOffset`], which explains both accepted forms.
pub fn parse_instant(text: &str, zone: &str, now: DateTime<Utc>) -> Result<Resolved, TimeError> {
    let trimmed = text.trim();
    let tz = if zone.trim().is_empty() {
        None
    } else {
        Some(parse_zone(zone)?)
    };
    match split_offset(trimmed) {
        Some((naive_part, offset_part)) => {
            let invalid = || TimeError::InvalidInstant {
                text: text.to_owned(),
            };
            let naive = parse_naive(naive_part).ok_or_else(invalid)?;
            check_year(naive, text)?;
            let range_or_offset = || TimeError::RangeOrOffset {
                text: text.to_owned(),
                offset: offset_part.to_owned(),
            };
            if is_hours_alone(offset_part) {
                return Err(range_or_offset());
            }
            let offset = parse_offset(offset_part).ok_or_else(|| TimeError::InvalidOffset {
                offset: offset_part.to_owned(),
            })?;
            if tz.is_some_and(|tz| written_like_a_range(naive_part, naive, tz, offset)) {
                return Err(range_or_offset());
            }
            let instant = offset
                .from_local_datetime(&naive)
                .single()
                .ok_or_else(invalid)?
                .with_timezone(&Utc);
            Ok(Resolved::new(instant, tz.unwrap_or(Tz::UTC)))
        }
        None => match tz {
            Some(tz) => {
                let naive = parse_naive(trimmed).ok_or_else(|| TimeError::InvalidInstant {
                    text: text.to_owned(),
                })?;
                check_year(naive, text)?;
                resolve_local(naive, tz, now)
            }
            None if parse_naive(trimmed).is_some() => Err(TimeError::MissingOffset {
                text: text.to_owned(),
            }),
            None => Err(TimeError::InvalidInstant {
                text: text.to_owned(),
            }),
        },
    }
}

/// `start` plus `minutes` of elapsed time. Adds to the instant, not the wall clock, so the result
/// is right across DST changes. `minutes` must be 1..=[`MAX_DURATION_MINUTES`].
pub fn end_after(start: DateTime<Utc>, minutes: i64) -> Result<DateTime<Utc>, TimeError> {
    let invalid = || TimeError::InvalidDuration {
        minutes,
        max_minutes: MAX_DURATION_MINUTES,
    };
    if !(1..=MAX_DURATION_MINUTES).contains(&minutes) {
        return Err(invalid());
    }
    start
        .checked_add_signed(TimeDelta::minutes(minutes))
        .ok_or_else(invalid)
}

/// Checks that `end` is after `start`.
pub fn check_end_after_start(start: DateTime<Utc>, end: DateTime<Utc>) -> Result<(), TimeError> {
    if end > start {
        Ok(())
    } else {
        Err(TimeError::EndNotAfterStart {
            start: start.to_rfc3339_opts(SecondsFormat::AutoSi, true),
            end: end.to_rfc3339_opts(SecondsFormat::AutoSi, true),
        })
    }
}

/// A half-open span of time `[start, end)` with `end > start` and a length of at most
/// [`MAX_DURATION_MINUTES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeRange {
    start: DateTime<Utc>,
    end: DateTime<Utc>,
}

impl TimeRange {
    /// A range from `start` to `end`; refuses an end that is not after the start or a range
    /// longer than [`MAX_DURATION_MINUTES`].
    pub fn new(start: DateTime<Utc>, end: DateTime<Utc>) -> Result<Self, TimeError> {
        check_end_after_start(start, end)?;
        let length = end - start;
        if length > TimeDelta::minutes(MAX_DURATION_MINUTES) {
            return Err(TimeError::InvalidDuration {
                minutes: length.num_minutes(),
                max_minutes: MAX_DURATION_MINUTES,
            });
        }
        Ok(Self { start, end })
    }

    /// A range of `minutes` elapsed minutes from `start` (see [`end_after`]).
    pub fn from_minutes(start: DateTime<Utc>, minutes: i64) -> Result<Self, TimeError> {
        let end = end_after(start, minutes)?;
        Ok(Self { start, end })
    }

    /// The first instant of the range.
    pub fn start(&self) -> DateTime<Utc> {
        self.start
    }

    /// The first instant after the range.
    pub fn end(&self) -> DateTime<Utc> {
        self.end
    }

    /// Elapsed whole minutes from start to end.
    pub fn minutes(&self) -> i64 {
        (self.end - self.start).num_minutes()
    }

    /// Whether the two ranges share an instant; touching ranges (one ends when the other
    /// starts) do not overlap.
    pub fn overlaps(&self, other: &Self) -> bool {
        self.start < other.end && other.start < self.end
    }
}

pub use outside::when::{from_now, in_words};

/// `+02:00`, `-05:00`, `+05:45`; seconds only for historic offsets that have them.
fn format_offset(offset: FixedOffset) -> String {
    let seconds = offset.local_minus_utc();
    let sign = if seconds < 0 { '-' } else { '+' };
    let abs = seconds.unsigned_abs();
    let (h, m, s) = (abs / 3600, abs / 60 % 60, abs % 60);
    if s == 0 {
        format!("{sign}{h:02}:{m:02}")
    } else {
        format!("{sign}{h:02}:{m:02}:{s:02}")
    }
}

fn format_naive(naive: NaiveDateTime) -> String {
    if naive.second() == 0 && naive.nanosecond() == 0 {
        naive.format("%Y-%m-%d %H:%M").to_string()
    } else {
        naive.format("%Y-%m-%d %H:%M:%S").to_string()
    }
}

/// `YYYY-MM-DD` + `T` or space + `HH:MM`, optional `:SS` and fraction.
fn parse_naive(text: &str) -> Option<NaiveDateTime> {
    const FORMATS: [&str; 4] = [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M",
    ];
    FORMATS
        .iter()
        .find_map(|format| NaiveDateTime::parse_from_str(text, format).ok())
}

fn parse_naive_local(local: &str) -> Result<NaiveDateTime, TimeError> {
    let naive = parse_naive(local.trim()).ok_or_else(|| TimeError::InvalidLocal {
        text: local.to_owned(),
    })?;
    check_year(naive, local)?;
    Ok(naive)
}

fn check_year(naive: NaiveDateTime, text: &str) -> Result<(), TimeError> {
    use chrono::Datelike as _;
    if (MIN_YEAR..=MAX_YEAR).contains(&naive.year()) {
        Ok(())
    } else {
        Err(TimeError::OutOfRange {
            text: text.to_owned(),
            min_year: MIN_YEAR,
            max_year: MAX_YEAR,
        })
    }
}

/// Whether `text` ends in what reads as an offset (`Z`, or `+` or `-` after the date), so that it
/// names an instant and is read by [`parse_instant`] rather than as a local time. The one test
/// of that, so that what reads a start and what parses it agree on every form.
pub fn carries_offset(text: &str) -> bool {
    split_offset(text.trim()).is_some()
}

/// Splits `2026-06-01T09:00:00+02:00` into the date-time and the offset (`Z`, `+HH:MM`, ...).
/// Returns `None` when the text carries no offset.
fn split_offset(text: &str) -> Option<(&str, &str)> {
    if let Some(rest) = text.strip_suffix(['Z', 'z']) {
        return Some((rest, "Z"));
    }
    // The date part `YYYY-MM-DD` holds the first ten characters and its own dashes.
    let time_part = text.get(10..)?;
    let at = time_part.rfind(['+', '-'])? + 10;
    Some((text.get(..at)?, text.get(at..)?))
}

/// `+HH` or `-HH`: an offset of hours alone, or the end of a range like `09:00-11`.
fn is_hours_alone(offset: &str) -> bool {
    let bytes = offset.as_bytes();
    bytes.len() == 3 && matches!(bytes[0], b'+' | b'-') && bytes[1..].iter().all(u8::is_ascii_digit)
}

/// Whether a date-time with an offset is written as a range would be: with a space, without
/// seconds, and with an offset `zone` does not have at that local time (`2055-06-07 09:00-10:30`
/// in Europe/Berlin). An ISO 8601 instant (`T`, seconds) or the zone's own offset is not.
fn written_like_a_range(
    naive_part: &str,
    naive: NaiveDateTime,
    zone: Tz,
    offset: FixedOffset,
) -> bool {
    let spaced = naive_part.as_bytes().get(10) == Some(&b' ');
    let without_seconds = naive_part.trim().len() == "YYYY-MM-DD HH:MM".len();
    let zones_own = readings(zone, naive)
        .iter()
        .any(|t| t.offset().fix() == offset);
    spaced && without_seconds && offset.local_minus_utc() != 0 && !zones_own
}

/// Every instant `naive` names in `tz`: one, two in a fold, none in a gap.
fn readings(tz: Tz, naive: NaiveDateTime) -> Vec<DateTime<Tz>> {
    match tz.from_local_datetime(&naive) {
        MappedLocalTime::Single(t) => vec![t],
        MappedLocalTime::Ambiguous(a, b) => vec![a, b],
        MappedLocalTime::None => Vec::new(),
    }
}

/// `Z`, `+HH:MM` or `+HHMM` (also with `-`), at most 18 hours. Not `+HH` alone (see
/// [`is_hours_alone`]).
fn parse_offset(text: &str) -> Option<FixedOffset> {
    if text.eq_ignore_ascii_case("z") {
        return FixedOffset::east_opt(0);
    }
    let (sign, digits) = match text.as_bytes().first()? {
        b'+' => (1, text.get(1..)?),
        b'-' => (-1, text.get(1..)?),
        _ => return None,
    };
    let (hours, minutes) = match digits.len() {
        4 => (digits.get(..2)?, digits.get(2..)?),
        5 if digits.as_bytes().get(2) == Some(&b':') => (digits.get(..2)?, digits.get(3..)?),
        _ => return None,
    };
    if !(hours.bytes().chain(minutes.bytes())).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let hours: i32 = hours.parse().ok()?;
    let minutes: i32 = minutes.parse().ok()?;
    if hours > 18 || minutes > 59 {
        return None;
    }
    FixedOffset::east_opt(sign * (hours * 3600 + minutes * 60))
}

fn resolve_local(naive: NaiveDateTime, tz: Tz, now: DateTime<Utc>) -> Result<Resolved, TimeError> {
    match tz.from_local_datetime(&naive) {
        MappedLocalTime::Single(t) => Ok(Resolved::new(t.with_timezone(&Utc), tz)),
        MappedLocalTime::Ambiguous(a, b) => {
            let (a, b) = (a.with_timezone(&Utc), b.with_timezone(&Utc));
            let (earlier, later) = if a <= b { (a, b) } else { (b, a) };
            Err(TimeError::Ambiguous {
                local: format_naive(naive),
                zone: tz.name().to_owned(),
                options: vec![Moment::new(earlier, tz, now), Moment::new(later, tz, now)],
            })
        }
        MappedLocalTime::None => Err(nonexistent(naive, tz, now)),
    }
}

fn offset_at(tz: Tz, instant: DateTime<Utc>) -> i32 {
    tz.offset_from_utc_datetime(&instant.naive_utc())
        .fix()
        .local_minus_utc()
}

/// Builds the gap error for a local time `naive` that does not exist in `tz`.
///
/// The jump happens at an instant `T` with `naive - after < T <= naive - before` (offsets as
/// seconds east of UTC). Offsets lie within ±15 hours, so `T` is within 15 hours of `naive` read
/// as UTC; a binary search over seconds finds it.
fn nonexistent(naive: NaiveDateTime, tz: Tz, now: DateTime<Utc>) -> TimeError {
    let as_utc = naive.and_utc();
    let local = format_naive(naive);
    let zone = tz.name().to_owned();
    let window = TimeDelta::hours(15);
    let (Some(mut lo), Some(mut hi)) = (
        as_utc.checked_sub_signed(window),
        as_utc.checked_add_signed(window),
    ) else {
        return TimeError::Nonexistent {
            local: local.clone(),
            zone,
            gap_from: local.clone(),
            gap_to: local,
            options: Vec::new(),
        };
    };
    let before = offset_at(tz, lo);
    if offset_at(tz, hi) == before {
        // Not a single jump inside the window; no options can be derived reliably.
        return TimeError::Nonexistent {
            local: local.clone(),
            zone,
            gap_from: local.clone(),
            gap_to: local,
            options: Vec::new(),
        };
    }
    // Invariant: offset(lo) == before, offset(hi) != before.
    while hi - lo > TimeDelta::seconds(1) {
        let mid = lo + (hi - lo) / 2;
        if offset_at(tz, mid) == before {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let jump = hi;
    let after = offset_at(tz, jump);
    let shift = |seconds: i32| TimeDelta::seconds(i64::from(seconds));
    let wall = |offset: i32| {
        (jump.naive_utc() + shift(offset))
            .format("%H:%M")
            .to_string()
    };
    let earlier = as_utc - shift(after);
    let later = as_utc - shift(before);
    TimeError::Nonexistent {
        local,
        zone,
        gap_from: wall(before),
        gap_to: wall(after),
        options: vec![Moment::new(earlier, tz, now), Moment::new(later, tz, now)],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .expect("valid RFC 3339 in test")
            .with_timezone(&Utc)
    }

    fn now() -> DateTime<Utc> {
        utc("2026-03-26T12:00:00Z")
    }

    #[test]
    fn berlin_gap_is_rejected_with_options() {
        let err = parse_local("2026-03-29 02:30", "Europe/Berlin", now()).unwrap_err();
        let TimeError::Nonexistent {
            local,
            zone,
            gap_from,
            gap_to,
            options,
        } = &err
        else {
            panic!("expected Nonexistent, got {err:?}");
        };
        assert_eq!(local, "2026-03-29 02:30");
        assert_eq!(zone, "Europe/Berlin");
        assert_eq!((gap_from.as_str(), gap_to.as_str()), ("02:00", "03:00"));
        let isos: Vec<&str> = options.iter().map(|m| m.iso.as_str()).collect();
        assert_eq!(
            isos,
            ["2026-03-29T01:30:00+01:00", "2026-03-29T03:30:00+02:00"]
        );
        let text = err.to_string();
        assert!(text.contains("does not exist in Europe/Berlin"), "{text}");
        assert!(text.contains("from 02:00 to 03:00"), "{text}");
        assert!(text.contains("2026-03-29T03:30:00+02:00"), "{text}");
        let json = serde_json::to_value(&err).expect("serializes");
        assert_eq!(json["code"], "nonexistent");
        assert_eq!(json["options"][1]["offset"], "+02:00");
    }

    #[test]
    fn gap_option_iso_is_accepted_back() {
        let err = parse_local("2026-03-29T02:30", "Europe/Berlin", now()).unwrap_err();
        let TimeError::Nonexistent { options, .. } = err else {
            panic!("expected Nonexistent");
        };
        for option in options {
            let back = parse_instant(&option.iso, "Europe/Berlin", now()).expect("option parses");
            assert_eq!(back.moment(now()), option);
        }
    }

    #[test]
    fn berlin_fold_returns_both_offsets() {
        let err = parse_local("2026-10-25 02:30", "Europe/Berlin", now()).unwrap_err();
        let TimeError::Ambiguous { options, .. } = &err else {
            panic!("expected Ambiguous, got {err:?}");
        };
        let offsets: Vec<&str> = options.iter().map(|m| m.offset.as_str()).collect();
        assert_eq!(offsets, ["+02:00", "+01:00"]);
        let utcs: Vec<&str> = options.iter().map(|m| m.utc.as_str()).collect();
        assert_eq!(utcs, ["2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z"]);
        assert!(options.iter().all(|m| m.local == "2026-10-25 02:30"));
        assert!(options.iter().all(|m| m.weekday == "Sunday"));
        let text = err.to_string();
        assert!(text.contains("occurs twice"), "{text}");
        assert!(text.contains("+02:00") && text.contains("+01:00"), "{text}");
    }

    #[test]
    fn fold_is_resolved_by_an_explicit_offset() {
        let later = parse_local_with_offset("2026-10-25 02:30", "Europe/Berlin", "+01:00", now())
            .expect("later reading");
        assert_eq!(later.instant, utc("2026-10-25T01:30:00Z"));
        let earlier = parse_local_with_offset("2026-10-25 02:30", "Europe/Berlin", "+02:00", now())
            .expect("earlier reading");
        assert_eq!(earlier.instant, utc("2026-10-25T00:30:00Z"));
        let wrong = parse_local_with_offset("2026-10-25 02:30", "Europe/Berlin", "+03:00", now())
            .unwrap_err();
        assert_eq!(
            wrong,
            TimeError::OffsetMismatch {
                local: "2026-10-25 02:30".into(),
                zone: "Europe/Berlin".into(),
                offset: "+03:00".into(),
                valid: vec!["+02:00".into(), "+01:00".into()],
            }
        );
        let fine = parse_local_with_offset("2026-06-01 09:00", "Europe/Berlin", "+02:00", now())
            .expect("summer");
        assert_eq!(fine.instant, utc("2026-06-01T07:00:00Z"));
        assert!(matches!(
            parse_local_with_offset("2026-03-29 02:30", "Europe/Berlin", "+02:00", now()),
            Err(TimeError::Nonexistent { .. })
        ));
        assert!(matches!(
            parse_local_with_offset("2026-06-01 09:00", "Europe/Berlin", "2", now()),
            Err(TimeError::InvalidOffset { .. })
        ));
    }

    #[test]
    fn fold_is_resolved_by_an_instant_with_offset() {
        let r = parse_instant("2026-10-25T02:30:00+01:00", "Europe/Berlin", now()).expect("ok");
        let m = r.moment(now());
        assert_eq!(m.local, "2026-10-25 02:30");
        assert_eq!(m.offset, "+01:00");
    }

    #[test]
    fn new_york_gap() {
        let err = parse_local("2026-03-08 02:30", "America/New_York", now()).unwrap_err();
        let TimeError::Nonexistent {
            gap_from,
            gap_to,
            options,
            ..
        } = &err
        else {
            panic!("expected Nonexistent, got {err:?}");
        };
        assert_eq!((gap_from.as_str(), gap_to.as_str()), ("02:00", "03:00"));
        let isos: Vec<&str> = options.iter().map(|m| m.iso.as_str()).collect();
        assert_eq!(
            isos,
            ["2026-03-08T01:30:00-05:00", "2026-03-08T03:30:00-04:00"]
        );
        assert!(options.iter().all(|m| m.weekday == "Sunday"));
    }

    #[test]
    fn half_hour_gap_lord_howe() {
        // Lord Howe Island jumps 02:00 -> 02:30 (+10:30 -> +11:00) on 2026-10-04.
        let err = parse_local("2026-10-04 02:15", "Australia/Lord_Howe", now()).unwrap_err();
        let TimeError::Nonexistent {
            gap_from,
            gap_to,
            options,
            ..
        } = &err
        else {
            panic!("expected Nonexistent, got {err:?}");
        };
        assert_eq!((gap_from.as_str(), gap_to.as_str()), ("02:00", "02:30"));
        let isos: Vec<&str> = options.iter().map(|m| m.iso.as_str()).collect();
        assert_eq!(
            isos,
            ["2026-10-04T01:45:00+10:30", "2026-10-04T02:45:00+11:00"]
        );
    }

    #[test]
    fn valid_local_times_resolve() {
        for text in [
            "2026-06-01 09:00",
            "2026-06-01T09:00",
            "2026-06-01 09:00:00",
            " 2026-06-01T09:00:00 ",
        ] {
            let r = parse_local(text, "Europe/Berlin", now()).expect(text);
            assert_eq!(r.instant, utc("2026-06-01T07:00:00Z"), "{text}");
            assert_eq!(r.zone, chrono_tz::Europe::Berlin);
        }
        // Just before and at the end of the gap.
        let before = parse_local("2026-03-29 01:59", "Europe/Berlin", now()).expect("01:59");
        assert_eq!(before.offset().local_minus_utc(), 3600);
        let after = parse_local("2026-03-29 03:00", "Europe/Berlin", now()).expect("03:00");
        assert_eq!(after.instant, utc("2026-03-29T01:00:00Z"));
    }

    #[test]
    fn invalid_local_times_are_rejected() {
        for text in [
            "2026-06-01",
            "01.06.2026 09:00",
            "2026-06-01 9am",
            "2026-02-30 09:00",
            "2026-06-01 24:00",
            "",
            "2026-06-01T09:00:00+02:00",
        ] {
            let err = parse_local(text, "Europe/Berlin", now()).unwrap_err();
            assert!(
                matches!(err, TimeError::InvalidLocal { .. }),
                "{text}: {err:?}"
            );
            assert!(err.to_string().contains("YYYY-MM-DD HH:MM"));
        }
        assert!(matches!(
            parse_local("0026-06-01 09:00", "Europe/Berlin", now()),
            Err(TimeError::OutOfRange { .. })
        ));
    }

    #[test]
    fn unknown_zone_is_named() {
        let err = parse_local("2026-06-01 09:00", "Europe/Berln", now()).unwrap_err();
        assert_eq!(
            err,
            TimeError::UnknownZone {
                zone: "Europe/Berln".into(),
                suggestion: None
            }
        );
        let text = err.to_string();
        assert!(text.contains("\"Europe/Berln\""), "{text}");
        assert!(text.contains("IANA"), "{text}");

        let err = parse_zone("europe/berlin").unwrap_err();
        assert!(
            err.to_string().contains("did you mean Europe/Berlin?"),
            "{err}"
        );
        for zone in ["CEST", "+02:00", ""] {
            assert!(parse_zone(zone).is_err(), "{zone}");
        }
        assert_eq!(
            parse_zone(" Europe/Berlin ").expect("trimmed"),
            chrono_tz::Europe::Berlin
        );
    }

    #[test]
    fn instants_with_offset_are_converted_into_the_zone() {
        let r = parse_instant("2026-06-01T09:00:00+02:00", "America/New_York", now()).expect("ok");
        assert_eq!(r.instant, utc("2026-06-01T07:00:00Z"));
        let m = r.moment(now());
        assert_eq!(m.local, "2026-06-01 03:00");
        assert_eq!(m.offset, "-04:00");
        assert_eq!(m.zone, "America/New_York");

        for text in [
            "2026-06-01T07:00:00Z",
            "2026-06-01T07:00Z",
            "2026-06-01 07:00:00z",
            "2026-06-01T09:00+02:00",
            "2026-06-01T09:00:00+0200",
            "2026-06-01T02:00:00-05:00",
            "2026-06-01T07:00:00.000Z",
        ] {
            let r = parse_instant(text, "Europe/Berlin", now()).expect(text);
            assert_eq!(r.instant, utc("2026-06-01T07:00:00Z"), "{text}");
        }
        // What reads as a range as much as an offset is refused: hours alone, or an offset the
        // zone does not have, written with a space and without seconds.
        for text in [
            "2026-06-01T09:00-11",
            "2026-06-01 09:00+02",
            "2026-06-01 09:00-10:30",
            "2026-06-01 09:00-11:00",
        ] {
            let err = parse_instant(text, "Europe/Berlin", now()).unwrap_err();
            assert!(
                matches!(err, TimeError::RangeOrOffset { .. }),
                "{text}: {err:?}"
            );
        }
        // An ISO instant with another zone's offset, or the zone's own offset, is read.
        for text in ["2026-06-01T03:00:00-04:00", "2026-06-01 09:00+02:00"] {
            let r = parse_instant(text, "Europe/Berlin", now()).expect(text);
            assert_eq!(r.instant, utc("2026-06-01T07:00:00Z"), "{text}");
        }
        // No zone: shown in UTC.
        let r = parse_instant("2026-06-01T09:00:00+02:00", "", now()).expect("ok");
        assert_eq!(r.zone, Tz::UTC);
        assert_eq!(r.moment(now()).iso, "2026-06-01T07:00:00+00:00");
    }

    #[test]
    fn time_without_offset_and_zone_is_rejected() {
        let err = parse_instant("2026-06-01T09:00:00", "", now()).unwrap_err();
        assert_eq!(
            err,
            TimeError::MissingOffset {
                text: "2026-06-01T09:00:00".into()
            }
        );
        let text = err.to_string();
        assert!(text.contains("IANA zone"), "{text}");
        assert!(text.contains("offset"), "{text}");
        assert_eq!(
            serde_json::to_value(&err).expect("json")["code"],
            "missing_offset"
        );
    }

    #[test]
    fn time_without_offset_but_with_zone_is_local() {
        let r = parse_instant("2026-06-01T09:00", "Europe/Berlin", now()).expect("local");
        assert_eq!(r.instant, utc("2026-06-01T07:00:00Z"));
        assert!(matches!(
            parse_instant("2026-03-29 02:30", "Europe/Berlin", now()),
            Err(TimeError::Nonexistent { .. })
        ));
        assert!(matches!(
            parse_instant("2026-10-25 02:30", "Europe/Berlin", now()),
            Err(TimeError::Ambiguous { .. })
        ));
    }

    #[test]
    fn malformed_instants_are_rejected() {
        for text in ["tomorrow", "2026-06-01T09:00:00+2", "", "2026-06-01"] {
            assert!(
                parse_instant(text, "Europe/Berlin", now()).is_err(),
                "{text}"
            );
        }
        assert!(matches!(
            parse_instant("2026-06-01T09:00:00+25:00", "", now()),
            Err(TimeError::InvalidOffset { .. })
        ));
        assert!(matches!(
            parse_instant("garbage", "", now()),
            Err(TimeError::InvalidInstant { .. })
        ));
        assert!(matches!(
            parse_instant("2026-06-01T09:00:00Z", "Mars/Olympus", now()),
            Err(TimeError::UnknownZone { .. })
        ));
    }

    #[test]
    fn the_repeated_hour_is_spoken_with_its_offset() {
        let berlin: Tz = "Europe/Berlin".parse().unwrap();
        let first = Moment::new(utc("2026-10-25T00:30:00Z"), berlin, now());
        let second = Moment::new(utc("2026-10-25T01:30:00Z"), berlin, now());
        assert_eq!(first.local, second.local);
        assert_eq!(
            first.spoken(),
            "Sunday 2026-10-25 02:30 (Europe/Berlin, UTC+02:00)"
        );
        assert_eq!(
            second.spoken(),
            "Sunday 2026-10-25 02:30 (Europe/Berlin, UTC+01:00)"
        );
        let plain = Moment::new(utc("2026-10-25T03:30:00Z"), berlin, now());
        assert_eq!(plain.spoken(), "Sunday 2026-10-25 04:30 (Europe/Berlin)");
    }

    #[test]
    fn abbreviation_like_zone_names_are_refused() {
        for name in ["EST", "MST", "HST"] {
            assert!(
                matches!(parse_zone(name), Err(TimeError::UnknownZone { .. })),
                "{name}"
            );
        }
        for name in [
            "UTC",
            "GMT",
            "CET",
            "NZ",
            "GB",
            "America/New_York",
            "EST5EDT",
            "Etc/GMT+5",
        ] {
            assert!(parse_zone(name).is_ok(), "{name}");
        }
    }

    #[test]
    fn moment_shows_weekday_local_offset_and_utc() {
        let m = Moment::new(
            utc("2026-03-29T01:00:00Z"),
            chrono_tz::Europe::Berlin,
            now(),
        );
        assert_eq!(
            m,
            Moment {
                weekday: "Sunday".into(),
                local: "2026-03-29 03:00".into(),
                zone: "Europe/Berlin".into(),
                offset: "+02:00".into(),
                repeated: false,
                utc: "2026-03-29T01:00:00Z".into(),
                iso: "2026-03-29T03:00:00+02:00".into(),
                from_now: "in 2 days 13 hours".into(),
            }
        );
        // Late evening in New York is already the next day in UTC.
        let m = Moment::new(
            utc("2026-06-02T02:30:00Z"),
            chrono_tz::America::New_York,
            now(),
        );
        assert_eq!(m.weekday, "Monday");
        assert_eq!(m.local, "2026-06-01 22:30");
        assert_eq!(m.utc, "2026-06-02T02:30:00Z");
        let json = serde_json::to_value(&m).expect("json");
        assert_eq!(
            json.as_object()
                .map(|o| o.keys().cloned().collect::<Vec<_>>()),
            Some(
                [
                    "weekday", "local", "zone", "offset", "utc", "iso", "from_now"
                ]
                .map(String::from)
                .to_vec()
            )
        );
        let m = Moment::new(utc("2026-06-01T07:00:30Z"), chrono_tz::UTC, now());
        assert_eq!(m.local, "2026-06-01 07:00:30");
    }

    #[test]
    fn durations_use_elapsed_time_across_dst() {
        let start = parse_local("2026-03-29 01:30", "Europe/Berlin", now()).expect("start");
        let end = start.plus_minutes(60).expect("end");
        let m = end.moment(now());
        assert_eq!(m.local, "2026-03-29 03:30");
        assert_eq!(m.offset, "+02:00");

        let start = parse_local_with_offset("2026-10-25 02:30", "Europe/Berlin", "+02:00", now())
            .expect("start");
        let end = start.plus_minutes(60).expect("end");
        assert_eq!(end.moment(now()).iso, "2026-10-25T02:30:00+01:00");

        let range = TimeRange::from_minutes(start.instant, 90).expect("range");
        assert_eq!(range.minutes(), 90);
        assert_eq!(range.end() - range.start(), TimeDelta::minutes(90));
    }

    #[test]
    fn durations_and_ranges_are_validated() {
        let start = utc("2026-06-01T07:00:00Z");
        for minutes in [0, -30, MAX_DURATION_MINUTES + 1] {
            let err = end_after(start, minutes).unwrap_err();
            assert!(
                matches!(err, TimeError::InvalidDuration { .. }),
                "{minutes}"
            );
            assert!(err.to_string().contains("from 1 to 20160"), "{err}");
        }
        assert!(end_after(start, MAX_DURATION_MINUTES).is_ok());

        assert!(check_end_after_start(start, start + TimeDelta::minutes(1)).is_ok());
        let err = check_end_after_start(start, start).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the end 2026-06-01T07:00:00Z is not after the start 2026-06-01T07:00:00Z; send an end later than the start, or a duration in minutes"
        );
        assert!(TimeRange::new(start, start - TimeDelta::minutes(5)).is_err());
        assert!(TimeRange::new(start, start + TimeDelta::days(15)).is_err());

        let a = TimeRange::from_minutes(start, 60).expect("a");
        let b = TimeRange::from_minutes(start + TimeDelta::minutes(60), 30).expect("b");
        let c = TimeRange::from_minutes(start + TimeDelta::minutes(59), 30).expect("c");
        assert!(!a.overlaps(&b) && !b.overlaps(&a));
        assert!(a.overlaps(&c) && c.overlaps(&a));
    }
}
