//! Dates that stay where a test needs them as the calendar moves on: the next daylight
//! saving changes, and weekdays ahead.

use chrono::{Datelike, Duration, NaiveDate, Utc, Weekday};

/// The last Sunday of `month` in `year` (when Europe's clocks change).
fn last_sunday(year: i32, month: u32) -> NaiveDate {
    let mut day = NaiveDate::from_ymd_opt(year, month + 1, 1).unwrap() - Duration::days(1);
    while day.weekday() != Weekday::Sun {
        day -= Duration::days(1);
    }
    day
}

/// The next last Sunday of `month` at least a week ahead: Europe's next clock change in
/// March (a gap at 02:00) or October (a fold at 03:00).
pub(crate) fn next_clock_change(month: u32) -> NaiveDate {
    let today = Utc::now().date_naive();
    let this_year = last_sunday(today.year(), month);
    if this_year > today + Duration::days(7) {
        this_year
    } else {
        last_sunday(today.year() + 1, month)
    }
}

/// A Tuesday at least `weeks` weeks ahead, as `YYYY-MM-DD`.
pub(crate) fn tuesday_ahead(weeks: i64) -> String {
    let mut day = Utc::now().date_naive() + Duration::weeks(weeks);
    while day.weekday() != Weekday::Tue {
        day += Duration::days(1);
    }
    day.to_string()
}
