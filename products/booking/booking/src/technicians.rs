//! Technicians: the people who go out to customers.

use std::sync::Arc;

use serde_json::json;
use store::{Condition, Item, Put, Store, Value};

use crate::ids::{Kind, TechnicianId};
use crate::text::version_of;
use crate::{Actor, BookingError, Change, keys, rights};

/// A technician as services hand it out. The private phone number stays in the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Technician {
    /// Random id part (`tec_<id>`).
    pub id: TechnicianId,
    /// Name.
    pub name: String,
    /// Skills (`boiler`, `electrics`, ...).
    pub skills: Vec<String>,
    /// Working hours, local to `zone` (`08:00-17:00`).
    pub working_hours: String,
    /// IANA time zone.
    pub zone: String,
    /// Whether on call now.
    pub on_call: bool,
    /// Content hash.
    pub version: String,
}

impl Technician {
    /// The public handle.
    pub fn handle(&self) -> String {
        self.id.handle()
    }

    fn from_item(id: TechnicianId, item: &Item) -> Self {
        let s = |k: &str| {
            item.get(k)
                .and_then(Value::as_s)
                .unwrap_or_default()
                .to_owned()
        };
        let skills = match item.get("skills") {
            Some(Value::L(list)) => list
                .iter()
                .filter_map(Value::as_s)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        };
        Technician {
            id,
            name: s("name"),
            skills,
            working_hours: s("working_hours"),
            zone: s("zone"),
            on_call: matches!(item.get("on_call"), Some(Value::Bool(true))),
            version: s("version"),
        }
    }
}

/// A new technician.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTechnician {
    /// Name.
    pub name: String,
    /// Skills.
    pub skills: Vec<String>,
    /// Working hours (`HH:MM-HH:MM`).
    pub working_hours: String,
    /// IANA zone.
    pub zone: String,
    /// On call.
    pub on_call: bool,
    /// Private phone (a secret: never in results).
    pub private_phone: String,
}

fn valid_hours(h: &str) -> bool {
    let parse = |t: &str| chrono::NaiveTime::parse_from_str(t, "%H:%M").ok();
    h.split_once('-')
        .and_then(|(a, b)| Some((parse(a)?, parse(b)?)))
        .is_some_and(|(a, b)| a < b)
}

/// The technician service.
#[derive(Debug, Clone)]
pub struct Technicians {
    store: Arc<dyn Store>,
    /// Where new ids come from.
    randomness: Arc<dyn outside::Randomness>,
}

impl Technicians {
    /// The service over `store`.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Technicians {
            store,
            randomness: Arc::new(outside::SystemRandomness),
        }
    }

    /// Draws new ids from `randomness` instead of the system's generator.
    pub fn with_randomness(mut self, randomness: Arc<dyn outside::Randomness>) -> Self {
        self.randomness = randomness;
        self
    }

    /// Every technician of the tenant, by name.
    pub async fn list(&self, actor: &Actor) -> Result<Vec<Technician>, BookingError> {
        actor.require(rights::BOOKINGS_READ)?;
        let decode =
            |id: &str, item: &Item| Some(Technician::from_item(TechnicianId::new(id), item));
        let (tenant, kind) = (&actor.tenant, Kind::Technician);
        let mut out = crate::records::scan(
            self.store.as_ref(),
            tenant,
            kind,
            decode,
            |_| true,
            usize::MAX,
        )
        .await?;
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// One technician.
    pub async fn get(&self, actor: &Actor, id: &TechnicianId) -> Result<Technician, BookingError> {
        actor.require(rights::BOOKINGS_READ)?;
        let item = self
            .store
            .get(&keys::object(&actor.tenant, Kind::Technician, id.as_str()))
            .await?
            .ok_or_else(|| BookingError::NotFound {
                kind: "technician",
                id: id.handle(),
            })?;
        Ok(Technician::from_item(id.clone(), &item))
    }

    /// Plans paging a technician: a text to their private phone, which stays on the server.
    /// Returns the change and the message (without the number).
    pub async fn page(
        &self,
        actor: &Actor,
        id: &TechnicianId,
        message: &str,
    ) -> Result<Change<Technician>, BookingError> {
        actor.require(rights::TECHNICIANS_PAGE)?;
        let text = crate::text::written("message", message, 300, crate::text::Lines::Many)?;
        let item = self
            .store
            .get(&keys::object(&actor.tenant, Kind::Technician, id.as_str()))
            .await?
            .ok_or_else(|| BookingError::NotFound {
                kind: "technician",
                id: id.handle(),
            })?;
        let phone = item
            .get("private_phone")
            .and_then(Value::as_s)
            .unwrap_or_default()
            .to_owned();
        let technician = Technician::from_item(id.clone(), &item);
        let handle = technician.handle();
        let mut change = Change::new(technician);
        crate::outbox::queue(
            self.randomness.as_ref(),
            &mut change,
            &actor.tenant,
            &outbox_format::Outgoing {
                to: &phone,
                subject: "Page",
                body: &text,
                about: &handle,
            },
        );
        // The number is a secret: what callers see names the technician, not the phone.
        change.notified = vec![handle.clone()];
        change.ids.push(handle);
        Ok(change)
    }

    /// Plans a new technician (the product's staff pages and seeding).
    pub fn create(
        &self,
        actor: &Actor,
        new: NewTechnician,
    ) -> Result<Change<Technician>, BookingError> {
        actor.require(rights::BOOKINGS_WRITE)?;
        let name = crate::text::written("name", &new.name, 100, crate::text::Lines::One)?;
        let name = name.as_str();
        if !valid_hours(&new.working_hours) {
            return Err(BookingError::invalid(
                "working_hours",
                "use HH:MM-HH:MM with the start before the end, e.g. 08:00-17:00",
            ));
        }
        if crate::time::parse_zone(&new.zone).is_err() {
            return Err(BookingError::invalid(
                "zone",
                format!(
                    "{:?} is not an IANA time zone such as Europe/Berlin",
                    new.zone
                ),
            ));
        }
        let id = TechnicianId::new(crate::ids::new_id(self.randomness.as_ref()));
        let mut item = Item::new();
        item.insert("name".into(), Value::s(name));
        item.insert(
            "skills".into(),
            Value::L(new.skills.iter().map(Value::s).collect()),
        );
        item.insert("working_hours".into(), Value::s(&new.working_hours));
        item.insert("zone".into(), Value::s(&new.zone));
        item.insert("on_call".into(), Value::Bool(new.on_call));
        item.insert("private_phone".into(), Value::s(&new.private_phone));
        let public = json!({"name": name, "skills": new.skills, "hours": new.working_hours, "zone": new.zone, "on_call": new.on_call});
        item.insert("version".into(), Value::s(version_of(&public)));
        let key = keys::object(&actor.tenant, Kind::Technician, id.as_str());
        let technician = Technician::from_item(id, &item);
        let handle = technician.handle();
        let mut change = Change::new(technician);
        change.push(
            Put::new(key, item).when(Condition::item_not_exists()),
            |_| BookingError::Rejected("a technician with this id exists; try again".into()),
        );
        change.ids.push(handle);
        Ok(change)
    }
}
