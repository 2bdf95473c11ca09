//! Bookings: a technician's visit to a customer, from draft to confirmed, cancelled or done.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde_json::json;
use store::{Condition, Item, Put, Store, TenantId, Value};

use crate::ids::{BookingId, CustomerId, Kind, TechnicianId};
use crate::text::version_of;
use crate::time;
use crate::{Actor, BookingError, Change, Expected, keys, rights};

/// Where a booking is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Planned; the customer knows nothing yet.
    Draft,
    /// Confirmed to the customer.
    Confirmed,
    /// Called off.
    Cancelled,
    /// Done.
    Completed,
}

impl Status {
    /// The status name.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Draft => "draft",
            Status::Confirmed => "confirmed",
            Status::Cancelled => "cancelled",
            Status::Completed => "completed",
        }
    }

    /// Reads a status name.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "draft" => Some(Status::Draft),
            "confirmed" => Some(Status::Confirmed),
            "cancelled" => Some(Status::Cancelled),
            "completed" => Some(Status::Completed),
            _ => None,
        }
    }
}

/// A booking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Booking {
    /// Random id part (`bkg_<id>`).
    pub id: BookingId,
    /// The customer's id part.
    pub customer: CustomerId,
    /// The technician's id part.
    pub technician: TechnicianId,
    /// What is done (`boiler service`).
    pub service: String,
    /// Start.
    pub start: DateTime<Utc>,
    /// End.
    pub end: DateTime<Utc>,
    /// The zone the booking is shown in (the customer's site).
    pub zone: Tz,
    /// Status.
    pub status: Status,
    /// Staff notes, oldest first.
    pub notes: Vec<String>,
    /// Content hash.
    pub version: String,
    /// Created as a deliberate duplicate (`separate`): it holds no claim on its slot.
    pub separate: bool,
}

impl Booking {
    /// The public handle.
    pub fn handle(&self) -> String {
        self.id.handle()
    }

    /// The claim on this booking's customer, technician and start.
    fn slot_claim(&self, tenant: &TenantId) -> store::Key {
        let business_key = format!(
            "{}|{}|{}",
            self.customer,
            self.technician,
            self.start.to_rfc3339()
        );
        keys::unique(tenant, "booking-slot", &business_key)
    }

    /// Moves the slot claim with the booking from where `before` stood (a draft or a
    /// confirmed booking that holds one).
    fn move_claim(&self, before: &Booking, change: &mut Change<Booking>, tenant: &TenantId) {
        if !self.separate {
            let (from, to) = (before.slot_claim(tenant), self.slot_claim(tenant));
            let what = "customer, technician and start";
            crate::claims::relocate(change, from, to, &self.handle(), "booking", what);
        }
    }

    /// The booking stored at `id` (the sort key) as `item`, if it reads as one.
    fn from_item(id: &str, item: &Item) -> Option<Self> {
        let s = |k: &str| item.get(k).and_then(Value::as_s).map(str::to_owned);
        let instant = |k: &str| {
            s(k).and_then(|t| DateTime::parse_from_rfc3339(&t).ok())
                .map(|t| t.with_timezone(&Utc))
        };
        Some(Booking {
            id: BookingId::new(id),
            customer: CustomerId::new(s("customer")?),
            technician: TechnicianId::new(s("technician")?),
            service: s("service").unwrap_or_default(),
            start: instant("start")?,
            end: instant("end")?,
            zone: s("zone")?.parse().ok()?,
            status: Status::parse(&s("status")?)?,
            notes: match item.get("notes") {
                Some(Value::L(list)) => list
                    .iter()
                    .filter_map(Value::as_s)
                    .map(str::to_owned)
                    .collect(),
                _ => Vec::new(),
            },
            version: s("version").unwrap_or_default(),
            separate: item.get("separate") == Some(&Value::Bool(true)),
        })
    }

    fn to_item(&self) -> Item {
        let mut item = Item::new();
        item.insert("customer".into(), Value::s(self.customer.as_str()));
        item.insert("technician".into(), Value::s(self.technician.as_str()));
        item.insert("service".into(), Value::s(&self.service));
        item.insert("start".into(), Value::s(self.start.to_rfc3339()));
        item.insert("end".into(), Value::s(self.end.to_rfc3339()));
        item.insert("zone".into(), Value::s(self.zone.name()));
        item.insert("status".into(), Value::s(self.status.as_str()));
        item.insert(
            "notes".into(),
            Value::L(self.notes.iter().map(Value::s).collect()),
        );
        item.insert("version".into(), Value::s(&self.version));
        if self.separate {
            item.insert("separate".into(), Value::Bool(true));
        }
        item
    }

    fn with_version(mut self) -> Self {
        self.version = version_of(&json!({
            "customer": self.customer,
            "technician": self.technician,
            "service": self.service,
            "start": self.start.to_rfc3339(),
            "end": self.end.to_rfc3339(),
            "zone": self.zone.name(),
            "status": self.status.as_str(),
            "notes": self.notes,
        }));
        self
    }
}

/// The attribute of a customer's item that names their latest booking. Making a booking sets
/// it in the booking's transaction (on the condition that the customer exists), and deleting a
/// customer is conditioned on it being what the deletion read before it looked for open
/// bookings: so a customer is never deleted with a booking made meanwhile, and no booking is
/// made for a customer deleted meanwhile. It is not part of the customer's version: making a
/// booking does not make a read customer stale.
pub(crate) const LATEST_BOOKING: &str = "latest_booking";

/// When something starts: local time in an IANA zone, or ISO 8601 with an offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum When {
    /// `2026-06-01 09:00` in `Europe/Berlin`.
    Local {
        /// Local date-time.
        local: String,
        /// IANA zone.
        zone: String,
    },
    /// `2026-06-01T09:00:00+02:00`, shown in `zone`.
    Instant {
        /// ISO 8601 with offset.
        iso: String,
        /// IANA zone to show it in.
        zone: String,
    },
}

impl When {
    /// An optional new start (a change): a `start` needs its `zone`.
    pub fn from_optional(
        start: Option<&str>,
        zone: Option<&str>,
    ) -> Result<Option<When>, BookingError> {
        match (start, zone) {
            (Some(start), Some(zone)) => Ok(Some(When::from_input(start, zone))),
            (None, None) => Ok(None),
            // A zone alone would either be ignored or move the booking to the same wall-clock
            // time elsewhere; neither is what a caller can be assumed to mean.
            (None, Some(_)) => Err(BookingError::invalid(
                "zone",
                "`zone` is the zone of `start` and changes nothing alone; send `start` with it",
            )),
            (Some(_), None) => Err(BookingError::invalid(
                "zone",
                "`start` needs `zone`, the IANA zone of the start, e.g. Europe/Berlin",
            )),
        }
    }

    /// A start as callers send it: ISO 8601 with an offset, or a local time; `zone` is the
    /// IANA zone either way (for local times the zone they are in; for instants the zone they
    /// are shown in). Every adapter reads starts through this one function.
    pub fn from_input(start: &str, zone: &str) -> When {
        let t = start.trim();
        if time::carries_offset(t) {
            When::Instant {
                iso: t.to_owned(),
                zone: zone.to_owned(),
            }
        } else {
            When::Local {
                local: t.to_owned(),
                zone: zone.to_owned(),
            }
        }
    }
}

/// A new draft booking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewBooking {
    /// The customer's id part.
    pub customer: CustomerId,
    /// The technician's id part.
    pub technician: TechnicianId,
    /// What is done.
    pub service: String,
    /// When it starts.
    pub start: When,
    /// How long, in minutes.
    pub duration_minutes: i64,
}

/// Where a confirmed booking moves ([`Bookings::reschedule`]): its new start and length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTime {
    /// The new start.
    pub start: When,
    /// The new length in minutes (`None`: as long as it is now).
    pub duration_minutes: Option<i64>,
}

/// Every booking of `tenant` that `filter` matches, earliest start first (no rights checked:
/// the caller has).
pub(crate) async fn matching(
    store: &dyn Store,
    tenant: &TenantId,
    filter: &BookingFilter,
) -> Result<Vec<Booking>, BookingError> {
    let keep = |b: &Booking| {
        filter.customer.as_ref().is_none_or(|c| *c == b.customer)
            && filter
                .technician
                .as_ref()
                .is_none_or(|t| *t == b.technician)
            && filter.status.is_none_or(|s| s == b.status)
            && filter
                .from
                .is_none_or(|day| b.start.with_timezone(&b.zone).date_naive() >= day)
    };
    let (kind, all) = (Kind::Booking, usize::MAX);
    let mut out = crate::records::scan(store, tenant, kind, Booking::from_item, keep, all).await?;
    out.sort_by_key(|b| b.start);
    Ok(out)
}

/// The most bookings one batch cancellation acts on: what one store transaction (100 writes)
/// takes once approved. Cancelling a confirmed booking writes four items (the booking, its claim,
/// the message and its due entry), the confirmation one bucket per booking and five more (the
/// switch checks, the audit row, the token's use, the executed action's mark): 5 x 19 + 5.
pub const MOST_CANCELLED_AT_ONCE: u32 = 19;

/// Filters for [`Bookings::find`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BookingFilter {
    /// Only this customer's.
    pub customer: Option<CustomerId>,
    /// Only this technician's.
    pub technician: Option<TechnicianId>,
    /// Only in this status.
    pub status: Option<Status>,
    /// Only those starting on or after this day, in the booking's own zone (so that a
    /// technician's coming visits are found past a long history).
    pub from: Option<chrono::NaiveDate>,
}

/// The attribute of a technician's schedule item that counts changes to it (ADR 46).
const SCHEDULE_REVISION: &str = "revision";

/// A technician's schedule as one read found it (see [`Bookings::schedule`]).
#[derive(Debug, Clone)]
pub struct Schedule {
    technician: TechnicianId,
    /// The revision read before the bookings (none before the first booking change).
    revision: Option<Value>,
    /// Their bookings, every status.
    bookings: Vec<Booking>,
}

/// One item of the bookings' partition as a schedule reads it.
enum Entry {
    Revision(Option<Value>),
    Booking(Booking),
}

/// How long ago a start may be and still be booked: a visit that is starting now.
pub const PAST_GRACE_MINUTES: i64 = 15;

/// A start read for booking: it must not lie in the past (ADR 17).
fn resolve_ahead(when: &When, now: DateTime<Utc>) -> Result<time::Resolved, BookingError> {
    let resolved = resolve(when, now)?;
    if resolved.instant >= now - chrono::TimeDelta::minutes(PAST_GRACE_MINUTES) {
        return Ok(resolved);
    }
    let next_year = match when {
        When::Local { local, .. } => same_time_ahead(local, resolved, now),
        When::Instant { .. } => None,
    };
    Err(BookingError::Past {
        field: "start",
        start: resolved.moment(now),
        next_year,
    })
}

/// `local` (`YYYY-MM-DD HH:MM`) moved to the first year in which it lies ahead of `now`.
fn same_time_ahead(local: &str, resolved: time::Resolved, now: DateTime<Utc>) -> Option<String> {
    let (date, rest) = local.trim().split_once(['-'])?;
    let year: i32 = date.parse().ok()?;
    let now_year = now
        .with_timezone(&resolved.zone)
        .format("%Y")
        .to_string()
        .parse::<i32>()
        .ok()?;
    (now_year.max(year)..=now_year + 1)
        .map(|y| format!("{y:04}-{rest}"))
        .find(|candidate| {
            time::parse_local(candidate, resolved.zone.name(), now).is_ok_and(|r| r.instant > now)
        })
}

/// Refuses to tell a customer about a booking whose start has passed.
pub(crate) fn not_past(booking: &Booking, now: DateTime<Utc>) -> Result<(), BookingError> {
    if booking.start >= now - chrono::TimeDelta::minutes(PAST_GRACE_MINUTES) {
        return Ok(());
    }
    Err(BookingError::Past {
        field: "booking",
        start: time::Moment::new(booking.start, booking.zone, now),
        next_year: None,
    })
}

fn resolve(when: &When, now: DateTime<Utc>) -> Result<time::Resolved, BookingError> {
    let result = match when {
        When::Local { local, zone } => time::parse_local(local, zone, now),
        When::Instant { iso, zone } => time::parse_instant(iso, zone, now),
    };
    result.map_err(|e| BookingError::Time {
        // A zone that is no zone is the `zone` argument's fault, not the start's.
        field: if matches!(e, time::TimeError::UnknownZone { .. }) {
            "zone"
        } else {
            "start"
        },
        error: e,
    })
}

fn check_service(service: &str) -> Result<String, BookingError> {
    crate::text::written("service", service, 200, crate::text::Lines::One)
}

/// The booking service.
#[derive(Debug, Clone)]
pub struct Bookings {
    store: Arc<dyn Store>,
    /// Where new ids come from.
    randomness: Arc<dyn outside::Randomness>,
}

impl Bookings {
    /// The service over `store`.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Bookings {
            store,
            randomness: Arc::new(outside::SystemRandomness),
        }
    }

    /// Draws new ids from `randomness` instead of the system's generator.
    pub fn with_randomness(mut self, randomness: Arc<dyn outside::Randomness>) -> Self {
        self.randomness = randomness;
        self
    }

    /// One booking.
    pub async fn get(&self, actor: &Actor, id: &BookingId) -> Result<Booking, BookingError> {
        actor.require(rights::BOOKINGS_READ)?;
        let item = self
            .store
            .get(&keys::object(&actor.tenant, Kind::Booking, id.as_str()))
            .await?;
        item.as_ref()
            .and_then(|i| Booking::from_item(id.as_str(), i))
            .ok_or_else(|| BookingError::NotFound {
                kind: "booking",
                id: id.handle(),
            })
    }

    /// Bookings matching the filter, earliest start first, at most `limit`.
    pub async fn find(
        &self,
        actor: &Actor,
        filter: &BookingFilter,
        limit: usize,
    ) -> Result<Vec<Booking>, BookingError> {
        actor.require(rights::BOOKINGS_READ)?;
        // A filter names records: they must be this tenant's (another tenant's handle is not
        // found, rather than silently matching nothing).
        if let Some(customer) = &filter.customer {
            self.exists(actor, Kind::Customer, customer.as_str())
                .await?;
        }
        if let Some(technician) = &filter.technician {
            self.exists(actor, Kind::Technician, technician.as_str())
                .await?;
        }
        let mut out = matching(self.store.as_ref(), &actor.tenant, filter).await?;
        out.truncate(limit);
        Ok(out)
    }

    /// The open bookings (drafts and confirmed) a batch cancellation acts on. The filter must
    /// name a customer or a technician (cancelling a whole workspace is not offered), the caller
    /// says how many it expects (1 to [`MOST_CANCELLED_AT_ONCE`]), and a different count
    /// refuses the batch with the matches, so that it never cancels what the caller has not
    /// seen.
    pub async fn open_matching(
        &self,
        actor: &Actor,
        customer: Option<CustomerId>,
        technician: Option<TechnicianId>,
        expected_count: Option<u32>,
    ) -> Result<Vec<Booking>, BookingError> {
        if customer.is_none() && technician.is_none() {
            return Err(BookingError::invalid(
                "customer",
                "name a `customer` or a `technician`; cancelling every booking of the workspace is not offered",
            ));
        }
        if expected_count.is_some_and(|n| !(1..=MOST_CANCELLED_AT_ONCE).contains(&n)) {
            return Err(BookingError::invalid(
                "expected_count",
                format!(
                    "must be 1 to {MOST_CANCELLED_AT_ONCE}; cancel larger sets one filter at a time"
                ),
            ));
        }
        let filter = BookingFilter {
            customer,
            technician,
            ..BookingFilter::default()
        };
        // Every match, not the first by start: a long history of closed bookings would hide
        // the open ones behind it.
        let open: Vec<Booking> = self
            .find(actor, &filter, usize::MAX)
            .await?
            .into_iter()
            .filter(|b| matches!(b.status, Status::Draft | Status::Confirmed))
            .collect();
        // Without an expected count the matches are listed and nothing is done: the caller
        // states how many it means to cancel, having seen them.
        if expected_count != Some(open.len() as u32) {
            return Err(BookingError::CountMismatch {
                kind: "booking",
                expected: expected_count,
                found: open.len(),
                matches: open.iter().map(Booking::handle).collect(),
            });
        }
        Ok(open)
    }

    /// Fails unless the record `id` of `kind` is the actor's tenant's (the kind is a value here,
    /// so the id is its text).
    async fn exists(&self, actor: &Actor, kind: Kind, id: &str) -> Result<(), BookingError> {
        match self
            .store
            .get(&keys::object(&actor.tenant, kind, id))
            .await?
        {
            Some(_) => Ok(()),
            None => Err(BookingError::NotFound {
                kind: kind.noun(),
                id: kind.handle(id),
            }),
        }
    }

    /// Plans a draft booking; nobody is told. The business key is customer + technician +
    /// start: a second draft with the same key needs `separate_reason`.
    pub async fn create_draft(
        &self,
        actor: &Actor,
        new: NewBooking,
        separate_reason: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<Change<Booking>, BookingError> {
        actor.require(rights::BOOKINGS_WRITE)?;
        let service = check_service(&new.service)?;
        if let Some(reason) = separate_reason {
            crate::text::written("reason", reason, 300, crate::text::Lines::One)?;
        }
        if !(15..=time::MAX_DURATION_MINUTES).contains(&new.duration_minutes) {
            return Err(BookingError::invalid(
                "duration_minutes",
                format!("must be 15 to {} minutes", time::MAX_DURATION_MINUTES),
            ));
        }
        // Every referenced record must be this tenant's.
        self.exists(actor, Kind::Customer, new.customer.as_str())
            .await?;
        self.exists(actor, Kind::Technician, new.technician.as_str())
            .await?;
        let start = resolve_ahead(&new.start, now)?;
        let end = start
            .plus_minutes(new.duration_minutes)
            .map_err(|e| BookingError::Time {
                field: "duration_minutes",
                error: e,
            })?;
        let booking = Booking {
            id: BookingId::new(crate::ids::new_id(self.randomness.as_ref())),
            customer: new.customer.clone(),
            technician: new.technician.clone(),
            service,
            start: start.instant,
            end: end.instant,
            zone: start.zone,
            status: Status::Draft,
            notes: Vec::new(),
            version: String::new(),
            separate: separate_reason.is_some(),
        }
        .with_version();
        let handle = booking.handle();
        let key = keys::object(&actor.tenant, Kind::Booking, booking.id.as_str());
        let item = booking.to_item();
        let mut change = Change::new(booking.clone());
        change.push(
            Put::new(key, item).when(Condition::item_not_exists()),
            |_| BookingError::Rejected("a booking with this id exists; try again".into()),
        );
        // The customer still exists when the booking lands, and a deletion that read them
        // before sees that they were booked meanwhile (`LATEST_BOOKING`).
        let customer = new.customer.handle();
        change.push(
            store::Update::new(
                keys::object(&actor.tenant, Kind::Customer, new.customer.as_str()),
                vec![store::UpdateAction::Set(
                    LATEST_BOOKING.into(),
                    Value::s(booking.id.as_str()),
                )],
            )
            .when(Condition::item_exists()),
            move |_| BookingError::NotFound {
                kind: "customer",
                id: customer.clone(),
            },
        );
        if separate_reason.is_none() {
            let what = "customer, technician and start";
            let key = booking.slot_claim(&actor.tenant);
            crate::claims::take(&mut change, key, &handle, "booking", what);
        }
        self.hold_time(&actor.tenant, &booking, &mut change, now)
            .await?;
        change.ids.push(handle);
        Ok(change)
    }

    /// A technician's schedule: their revision and their bookings, read by one pass over the
    /// bookings' partition, in which the revision comes first (ADR 46).
    pub async fn schedule(
        &self,
        tenant: &TenantId,
        technician: &TechnicianId,
    ) -> Result<Schedule, BookingError> {
        let revision_key = keys::schedule(tenant, technician);
        let decode = |sk: &str, item: &Item| match sk == revision_key.sk {
            true => Some(Entry::Revision(item.get(SCHEDULE_REVISION).cloned())),
            false => Booking::from_item(sk, item).map(Entry::Booking),
        };
        let keep = |entry: &Entry| match entry {
            Entry::Revision(_) => true,
            Entry::Booking(b) => b.technician == *technician,
        };
        let entries = crate::records::scan(
            self.store.as_ref(),
            tenant,
            Kind::Booking,
            decode,
            keep,
            usize::MAX,
        )
        .await?;
        let mut schedule = Schedule {
            technician: technician.clone(),
            revision: None,
            bookings: Vec::new(),
        };
        for entry in entries {
            match entry {
                Entry::Revision(revision) => schedule.revision = revision,
                Entry::Booking(b) => schedule.bookings.push(b),
            }
        }
        Ok(schedule)
    }

    /// [`Bookings::check_free`] against the technician's schedule as read now; a deliberate
    /// second booking reads nothing.
    async fn hold_time(
        &self,
        tenant: &TenantId,
        booking: &Booking,
        change: &mut Change<Booking>,
        now: DateTime<Utc>,
    ) -> Result<(), BookingError> {
        if booking.separate {
            return Ok(());
        }
        let schedule = self.schedule(tenant, &booking.technician).await?;
        Self::check_free(tenant, booking, schedule, change, now)
    }

    /// Refuses `booking`'s time when another open booking of its technician overlaps it in
    /// `schedule`, and makes `change` commit only while the schedule's revision is the one read
    /// with it, adding one (ADR 46). A deliberate second booking (`separate`) is the caller's
    /// choice, and not checked.
    fn check_free(
        tenant: &TenantId,
        booking: &Booking,
        schedule: Schedule,
        change: &mut Change<Booking>,
        now: DateTime<Utc>,
    ) -> Result<(), BookingError> {
        if booking.separate {
            return Ok(());
        }
        // Every open booking counts, a deliberate separate one too; one with the same customer
        // and start is the duplicate guard's to refuse, with its way to a separate booking.
        if let Some(other) = schedule.bookings.iter().find(|b| {
            b.id != booking.id
                && matches!(b.status, Status::Draft | Status::Confirmed)
                && b.start < booking.end
                && booking.start < b.end
                && !(b.customer == booking.customer && b.start == booking.start)
        }) {
            return Err(BookingError::Busy {
                technician: booking.technician.handle(),
                other: other.handle(),
                from: Box::new(time::Moment::new(other.start, other.zone, now)),
                until: Box::new(time::Moment::new(other.end, other.zone, now)),
                day: booking
                    .start
                    .with_timezone(&booking.zone)
                    .format("%Y-%m-%d")
                    .to_string(),
                minutes: (booking.end - booking.start).num_minutes(),
            });
        }
        let unchanged = match schedule.revision {
            Some(read) => Condition::eq(SCHEDULE_REVISION, read),
            None => Condition::NotExists(SCHEDULE_REVISION.into()),
        };
        let handle = booking.technician.handle();
        change.push(
            store::Update::new(
                keys::schedule(tenant, &schedule.technician),
                vec![store::UpdateAction::Add(
                    SCHEDULE_REVISION.into(),
                    store::Number::from(1i64),
                )],
            )
            .when(unchanged),
            move |_| {
                BookingError::Rejected(format!(
                    "{handle} was booked by another change at the same moment; send the same call again to check the time against it"
                ))
            },
        );
        Ok(())
    }

    fn save(
        change: &mut Change<Booking>,
        tenant: &TenantId,
        expected_version: &str,
        booking: &Booking,
    ) {
        let expected = expected_version.to_owned();
        let handle = booking.handle();
        change.push(
            Put::new(
                keys::object(tenant, Kind::Booking, booking.id.as_str()),
                booking.to_item(),
            )
            .when(Condition::eq("version", Value::s(expected_version))),
            move |_| BookingError::Stale {
                kind: "booking",
                expected: expected.clone(),
                current: json!({"booking": handle}),
            },
        );
    }

    /// The booking at `version`, if `allowed` accepts its current status. The status is asked
    /// first: a booking that the change cannot apply to at all (a draft confirmed meanwhile,
    /// perhaps by this very conversation) is refused for that, not sent back to re-read a
    /// version that would be refused next.
    async fn current(
        &self,
        actor: &Actor,
        id: &BookingId,
        version: &str,
        allowed: impl FnOnce(&Booking) -> Result<(), BookingError>,
    ) -> Result<Booking, BookingError> {
        let booking = self.get(actor, id).await?;
        allowed(&booking)?;
        if booking.version != version {
            return Err(BookingError::Stale {
                kind: "booking",
                expected: version.to_owned(),
                current: json!({"booking": booking.handle(), "version": booking.version, "status": booking.status.as_str(), "start": booking.start.to_rfc3339()}),
            });
        }
        Ok(booking)
    }

    /// Plans changes to a draft (a confirmed booking is changed with a message to the
    /// customer, by `reschedule`, not here).
    pub async fn update_draft(
        &self,
        actor: &Actor,
        id: &BookingId,
        version: &str,
        service: Option<String>,
        start: Option<When>,
        duration_minutes: Option<i64>,
        now: DateTime<Utc>,
    ) -> Result<Change<Booking>, BookingError> {
        actor.require(rights::BOOKINGS_WRITE)?;
        let mut booking = self
            .current(actor, id, version, |b| {
                in_status(b, b.status == Status::Draft, "; only drafts change silently (a confirmed booking is moved with reschedule_booking, which tells the customer)")
            })
            .await?;
        let before = booking.clone();
        if let Some(service) = service {
            booking.service = check_service(&service)?;
        }
        let minutes =
            duration_minutes.unwrap_or_else(|| (booking.end - booking.start).num_minutes());
        if !(15..=time::MAX_DURATION_MINUTES).contains(&minutes) {
            return Err(BookingError::invalid(
                "duration_minutes",
                format!("must be 15 to {} minutes", time::MAX_DURATION_MINUTES),
            ));
        }
        if let Some(when) = start {
            let resolved = resolve_ahead(&when, now)?;
            booking.start = resolved.instant;
            booking.zone = resolved.zone;
        }
        booking.end = time::end_after(booking.start, minutes).map_err(|e| BookingError::Time {
            field: "duration_minutes",
            error: e,
        })?;
        let booking = booking.with_version();
        let mut change = Change::new(booking.clone());
        Self::save(&mut change, &actor.tenant, version, &booking);
        booking.move_claim(&before, &mut change, &actor.tenant);
        if (booking.start, booking.end) != (before.start, before.end) {
            self.hold_time(&actor.tenant, &booking, &mut change, now)
                .await?;
        }
        change.ids.push(booking.handle());
        Ok(change)
    }

    /// Plans adding a staff note (silent).
    pub async fn add_note(
        &self,
        actor: &Actor,
        id: &BookingId,
        note: &str,
    ) -> Result<Change<Booking>, BookingError> {
        actor.require(rights::BOOKINGS_WRITE)?;
        let text = crate::text::written("note", note, 1000, crate::text::Lines::Many)?;
        let current = self.get(actor, id).await?;
        let version = current.version.clone();
        let mut booking = current;
        booking.notes.push(text);
        let booking = booking.with_version();
        let mut change = Change::new(booking.clone());
        Self::save(&mut change, &actor.tenant, &version, &booking);
        change.ids.push(booking.handle());
        Ok(change)
    }

    /// Plans confirming a draft to the customer: the booking becomes confirmed and a message
    /// to the customer goes to the outbox, in one change.
    pub async fn confirm(
        &self,
        actor: &Actor,
        id: &BookingId,
        version: &str,
        customer_email: &str,
        text: &str,
    ) -> Result<Change<Booking>, BookingError> {
        actor.require(rights::BOOKINGS_WRITE)?;
        actor.require(rights::CUSTOMERS_NOTIFY)?;
        let mut booking = self
            .current(actor, id, version, |b| {
                in_status(
                    b,
                    b.status == Status::Draft,
                    ", not a draft; it was confirmed or closed already",
                )
            })
            .await?;
        booking.status = Status::Confirmed;
        let booking = booking.with_version();
        let mut change = Change::new(booking.clone());
        Self::save(&mut change, &actor.tenant, version, &booking);
        crate::outbox::queue(
            self.randomness.as_ref(),
            &mut change,
            &actor.tenant,
            &outbox_format::Outgoing {
                to: customer_email,
                subject: "Your booking is confirmed",
                body: text,
                about: &booking.handle(),
            },
        );
        change.ids.push(booking.handle());
        Ok(change)
    }

    /// Plans cancelling a booking; a confirmed one's customer is told, unless the visit has
    /// ended by `now`.
    pub async fn cancel(
        &self,
        actor: &Actor,
        id: &BookingId,
        version: &str,
        customer_email: &str,
        text: &str,
        now: DateTime<Utc>,
    ) -> Result<Change<Booking>, BookingError> {
        actor.require(rights::BOOKINGS_WRITE)?;
        let booking = self.current(actor, id, version, still_open).await?;
        self.cancel_read(actor, booking, customer_email, text, now)
    }

    /// [`Bookings::cancel`] of a booking the caller has just read (by `get` or `find`), without
    /// reading it again: the write is conditional on the version read, so a change in between
    /// is a conflict, as with `cancel`.
    pub fn cancel_read(
        &self,
        actor: &Actor,
        booking: Booking,
        customer_email: &str,
        text: &str,
        now: DateTime<Utc>,
    ) -> Result<Change<Booking>, BookingError> {
        let (mut change, tell) = self.cancel_untold(actor, booking, now)?;
        if tell {
            let about = change.value.handle();
            crate::outbox::queue(
                self.randomness.as_ref(),
                &mut change,
                &actor.tenant,
                &outbox_format::Outgoing {
                    to: customer_email,
                    subject: "Your booking is cancelled",
                    body: text,
                    about: &about,
                },
            );
        }
        Ok(change)
    }

    /// A cancellation without its message, and whether the customer must be told (the
    /// booking was confirmed and its visit has not ended by `now`: a message about a past
    /// visit is always wrong, ADR 17): a batch tells each customer once, of all their bookings.
    pub(crate) fn cancel_untold(
        &self,
        actor: &Actor,
        mut booking: Booking,
        now: DateTime<Utc>,
    ) -> Result<(Change<Booking>, bool), BookingError> {
        actor.require(rights::BOOKINGS_WRITE)?;
        // The save is conditional on this version at this key in the actor's tenant, so a
        // booking that is not (or no longer) there as read cannot be written.
        let version = booking.version.clone();
        let version = version.as_str();
        still_open(&booking)?;
        let tell = booking.status == Status::Confirmed && booking.end > now;
        if tell {
            actor.require(rights::CUSTOMERS_NOTIFY)?;
        }
        booking.status = Status::Cancelled;
        let booking = booking.with_version();
        let mut change = Change::new(booking.clone());
        change.counted = false;
        Self::save(&mut change, &actor.tenant, version, &booking);
        // A cancelled booking blocks nothing: its slot is free for another.
        if !booking.separate {
            let key = booking.slot_claim(&actor.tenant);
            crate::claims::release(&mut change, key, &booking.handle());
        }
        change.ids.push(booking.handle());
        Ok((change, tell))
    }

    /// Queues one message to `customer` on `change`: the cancellation of `told`, all theirs.
    pub(crate) fn tell_cancelled(
        &self,
        actor: &Actor,
        change: &mut Change<Booking>,
        customer: &crate::Customer,
        told: &[&Booking],
    ) {
        let text = crate::messages::bookings_cancelled(customer, told);
        let subject = if told.len() == 1 {
            "Your booking is cancelled"
        } else {
            "Your bookings are cancelled"
        };
        crate::outbox::queue(
            self.randomness.as_ref(),
            change,
            &actor.tenant,
            &outbox_format::Outgoing {
                to: &customer.email,
                subject,
                body: &text,
                about: &customer.handle(),
            },
        );
    }
}

impl Bookings {
    /// Plans moving a confirmed booking; the customer is told. Drafts move silently with
    /// `update_draft` instead.
    pub async fn reschedule(
        &self,
        actor: &Actor,
        expected: Expected<'_, BookingId>,
        to: NewTime,
        customer_email: &str,
        schedule: Schedule,
        now: DateTime<Utc>,
    ) -> Result<Change<Booking>, BookingError> {
        let Expected { id, version } = expected;
        let NewTime {
            start,
            duration_minutes,
        } = to;
        actor.require(rights::BOOKINGS_WRITE)?;
        actor.require(rights::CUSTOMERS_NOTIFY)?;
        let mut booking = self
            .current(actor, id, version, |b| {
                in_status(b, b.status == Status::Confirmed, "; only confirmed bookings are rescheduled with a message (drafts change with update_booking)")
            })
            .await?;
        let before = booking.clone();
        let minutes =
            duration_minutes.unwrap_or_else(|| (booking.end - booking.start).num_minutes());
        if !(15..=time::MAX_DURATION_MINUTES).contains(&minutes) {
            return Err(BookingError::invalid(
                "duration_minutes",
                format!("must be 15 to {} minutes", time::MAX_DURATION_MINUTES),
            ));
        }
        let resolved = resolve_ahead(&start, now)?;
        booking.start = resolved.instant;
        booking.zone = resolved.zone;
        booking.end = time::end_after(booking.start, minutes).map_err(|e| BookingError::Time {
            field: "duration_minutes",
            error: e,
        })?;
        if (booking.start, booking.end) == (before.start, before.end) {
            // A move to where it is would tell the customer of a change that is none: a
            // retried or repeated move, already done.
            return Err(BookingError::Rejected(format!(
                "booking {} already runs from {} to {}; nothing was moved and no one was told",
                booking.handle(),
                before.start.with_timezone(&before.zone).to_rfc3339(),
                before.end.with_timezone(&before.zone).to_rfc3339(),
            )));
        }
        let booking = booking.with_version();
        let moment = time::Moment::new(booking.start, booking.zone, now);
        let text = format!(
            "Your {} booking ({}) moves to {}.",
            booking.service,
            booking.handle(),
            moment.spoken()
        );
        let mut change = Change::new(booking.clone());
        Self::save(&mut change, &actor.tenant, version, &booking);
        booking.move_claim(&before, &mut change, &actor.tenant);
        Self::check_free(&actor.tenant, &booking, schedule, &mut change, now)?;
        crate::outbox::queue(
            self.randomness.as_ref(),
            &mut change,
            &actor.tenant,
            &outbox_format::Outgoing {
                to: customer_email,
                subject: "Your booking moves",
                body: &text,
                about: &booking.handle(),
            },
        );
        change.ids.push(booking.handle());
        Ok(change)
    }

    /// Plans deleting a booking (drafts and cancelled ones; a confirmed booking is cancelled
    /// first, so that the customer is told).
    pub async fn delete(
        &self,
        actor: &Actor,
        id: &BookingId,
        version: &str,
    ) -> Result<Change<Booking>, BookingError> {
        actor.require(rights::RECORDS_DELETE)?;
        let booking = self
            .current(actor, id, version, |b| {
                in_status(
                    b,
                    b.status != Status::Confirmed,
                    "; cancel it first so the customer is told",
                )
            })
            .await?;
        let handle = booking.handle();
        let mut change = Change::new(booking.clone());
        change.push(
            store::Delete::new(keys::object(&actor.tenant, Kind::Booking, id.as_str()))
                .when(Condition::eq("version", Value::s(version))),
            |_| {
                BookingError::Rejected(
                    "the booking changed since it was read; read it again".into(),
                )
            },
        );
        // A cancelled booking gave its claim back when it was cancelled; the slot may be
        // another booking's now, whose claim is not this one's to release.
        if !booking.separate && booking.status != Status::Cancelled {
            let key = booking.slot_claim(&actor.tenant);
            crate::claims::release(&mut change, key, &handle);
        }
        change.ids.push(handle);
        Ok(change)
    }
}

/// Refuses a booking that is closed already (cancelled or completed).
fn still_open(booking: &Booking) -> Result<(), BookingError> {
    let open = !matches!(booking.status, Status::Cancelled | Status::Completed);
    in_status(booking, open, " already")
}

/// Refuses a change to `booking` unless `allowed`, saying "booking <handle> is <status>" and
/// `why`.
fn in_status(booking: &Booking, allowed: bool, why: &str) -> Result<(), BookingError> {
    if allowed {
        return Ok(());
    }
    Err(BookingError::Rejected(format!(
        "booking {} is {}{why}",
        booking.handle(),
        booking.status.as_str()
    )))
}
