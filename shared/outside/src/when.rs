//! Moments as people read them: in a workspace's zone, and how far from now (`in 2 hours`,
//! `3 days ago`). The pages show expiries and activity this way; products say when in their
//! messages the same way.

use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::Tz;

/// A moment as a person in `zone` reads it: `Wed 2 Dec 2026, 14:05 CET (in 9 minutes)`. An
/// unknown zone shows UTC.
pub fn in_words(instant: DateTime<Utc>, zone: &str, now: DateTime<Utc>) -> String {
    // A stored zone is read as stored, even one input would now refuse.
    let zone = zone.trim().parse::<Tz>().unwrap_or(chrono_tz::UTC);
    let local = instant.with_timezone(&zone);
    format!(
        "{} ({})",
        local.format("%a %-d %b %Y, %H:%M %Z"),
        from_now(instant, now)
    )
}

/// Human distance from `now` to `instant`: `now` under a minute, then `in 5 minutes`,
/// `2 hours 30 minutes ago`, `in 1 day 4 hours`, and from 7 days on whole days (`in 45 days`).
/// Units are truncated, never rounded up.
pub fn from_now(instant: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let delta = instant - now;
    let future = delta > TimeDelta::zero();
    let total_minutes = delta.num_minutes().unsigned_abs();
    if total_minutes == 0 {
        return "now".to_owned();
    }
    let days = total_minutes / (24 * 60);
    let hours = total_minutes / 60 % 24;
    let minutes = total_minutes % 60;
    let text = if days >= 7 {
        unit(days, "day")
    } else if days > 0 {
        join_units(unit(days, "day"), hours, "hour")
    } else if hours > 0 {
        join_units(unit(hours, "hour"), minutes, "minute")
    } else {
        unit(minutes, "minute")
    };
    if future {
        format!("in {text}")
    } else {
        format!("{text} ago")
    }
}

fn unit(count: u64, name: &str) -> String {
    if count == 1 {
        format!("1 {name}")
    } else {
        format!("{count} {name}s")
    }
}

fn join_units(first: String, count: u64, name: &str) -> String {
    if count == 0 {
        first
    } else {
        format!("{first} {}", unit(count, name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        "2026-12-02T13:56:00Z".parse().unwrap()
    }

    #[test]
    fn from_now_phrasing() {
        let n = now();
        let cases = [
            (TimeDelta::zero(), "now"),
            (TimeDelta::seconds(59), "now"),
            (TimeDelta::seconds(-59), "now"),
            (TimeDelta::minutes(1), "in 1 minute"),
            (TimeDelta::minutes(5), "in 5 minutes"),
            (TimeDelta::minutes(-5), "5 minutes ago"),
            (TimeDelta::hours(2), "in 2 hours"),
            (TimeDelta::hours(-2), "2 hours ago"),
            (TimeDelta::minutes(-150), "2 hours 30 minutes ago"),
            (TimeDelta::minutes(61), "in 1 hour 1 minute"),
            (TimeDelta::days(3), "in 3 days"),
            (TimeDelta::hours(25), "in 1 day 1 hour"),
            (TimeDelta::days(-1), "1 day ago"),
            (TimeDelta::days(45) + TimeDelta::hours(5), "in 45 days"),
            (TimeDelta::days(-7), "7 days ago"),
        ];
        for (delta, expected) in cases {
            assert_eq!(from_now(n + delta, n), expected, "{delta:?}");
        }
    }
}
