//! `{{...}}` references in scenarios and recordings, and the conditions of checks.
//!
//! Two kinds of reference:
//! - fixture references `[tenant.]kind:name` find a demo object by name in the state read
//!   before the model started (`customer:Ada Lovelace`, `technician:Tom Weber`,
//!   `booking:heat pump install` by service, `globex.booking:pipe repair`), and give its
//!   handle;
//! - path references `name.path` read a named earlier result (`setup.b1.booking.booking`,
//!   `p.confirm_token`, `rc.changes[action=create_booking].ids[0]`). A path is fields
//!   separated by dots, with `[n]` indexes and `[field=value]` / `[field~value]` filters (equal,
//!   or contains ignoring case).

use std::collections::BTreeMap;

use anyhow::{anyhow, bail};
use serde_json::{Value, json};

/// What references can see.
#[derive(Debug, Default, Clone)]
pub struct Scope {
    /// The scenario's tenant (for fixture references without a tenant).
    pub tenant: String,
    /// Per tenant: customers, bookings and technicians as read.
    pub fixture: BTreeMap<String, FixtureTenant>,
    /// Named results.
    pub results: BTreeMap<String, Value>,
}

/// One tenant's objects for fixture references.
#[derive(Debug, Default, Clone)]
pub struct FixtureTenant {
    /// `find_customers` objects.
    pub customers: Vec<Value>,
    /// `find_bookings` objects.
    pub bookings: Vec<Value>,
    /// `list_technicians` objects.
    pub technicians: Vec<Value>,
}

impl Scope {
    /// Resolves one reference (without the braces).
    pub fn resolve(&self, expr: &str) -> anyhow::Result<Value> {
        let expr = expr.trim();
        if let Some((head, name)) = expr.split_once(':')
            && !head.contains('[')
        {
            return self.fixture_ref(head, name.trim());
        }
        let segments = parse_path(expr)?;
        let Some(Segment::Field(first)) = segments.first() else {
            bail!("reference {expr:?} must start with a name");
        };
        let (root, rest) = if first == "setup" {
            let Some(Segment::Field(second)) = segments.get(1) else {
                bail!("reference {expr:?}: `setup.` needs a step name");
            };
            let key = format!("setup.{second}");
            (self.results.get(&key), &segments[2..])
        } else {
            (self.results.get(first.as_str()), &segments[1..])
        };
        let root = root.ok_or_else(|| anyhow!("reference {expr:?}: no result named so"))?;
        walk(root, rest)
            .map(|v| unwrapped(v).clone())
            .ok_or_else(|| anyhow!("reference {expr:?} finds nothing in {}", short(root)))
    }

    fn fixture_ref(&self, head: &str, name: &str) -> anyhow::Result<Value> {
        let (tenant, kind) = match head.split_once('.') {
            Some((t, k)) => (t, k),
            None => (self.tenant.as_str(), head),
        };
        let data = self
            .fixture
            .get(tenant)
            .ok_or_else(|| anyhow!("no fixture for tenant {tenant}"))?;
        let (list, field, handle) = match kind {
            "customer" => (&data.customers, "name", "customer"),
            "customer_email" => (&data.customers, "email", "customer"),
            "technician" => (&data.technicians, "name", "technician"),
            "booking" => (&data.bookings, "service", "booking"),
            other => bail!("unknown fixture kind {other}"),
        };
        list.iter()
            .find(|o| {
                o.get(field)
                    .map(unwrapped)
                    .and_then(Value::as_str)
                    .is_some_and(|v| v.eq_ignore_ascii_case(name))
            })
            .and_then(|o| o.get(handle).cloned())
            .ok_or_else(|| anyhow!("no {kind} named {name:?} in {tenant}"))
    }

    /// Replaces references in every string of `template`. A string that is exactly one
    /// reference becomes the referenced value itself.
    pub fn render(&self, template: &Value) -> anyhow::Result<Value> {
        Ok(match template {
            Value::String(s) => self.render_str(s)?,
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|v| self.render(v))
                    .collect::<anyhow::Result<_>>()?,
            ),
            Value::Object(map) => {
                let mut out = serde_json::Map::new();
                for (k, v) in map {
                    out.insert(k.clone(), self.render(v)?);
                }
                Value::Object(out)
            }
            other => other.clone(),
        })
    }

    fn render_str(&self, s: &str) -> anyhow::Result<Value> {
        let trimmed = s.trim();
        if trimmed.starts_with("{{")
            && trimmed.ends_with("}}")
            && trimmed.matches("{{").count() == 1
        {
            return self.resolve(&trimmed[2..trimmed.len() - 2]);
        }
        Ok(Value::String(self.render_text(s)?))
    }

    /// Replaces references inside a text.
    pub fn render_text(&self, s: &str) -> anyhow::Result<String> {
        let mut out = String::new();
        let mut rest = s;
        while let Some(start) = rest.find("{{") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let end = after
                .find("}}")
                .ok_or_else(|| anyhow!("unclosed reference in {s:?}"))?;
            match self.resolve(&after[..end])? {
                Value::String(v) => out.push_str(&v),
                other => out.push_str(&other.to_string()),
            }
            rest = &after[end + 2..];
        }
        out.push_str(rest);
        Ok(out)
    }
}

fn short(v: &Value) -> String {
    crate::truncate(&v.to_string(), 300)
}

/// One step of a path.
#[derive(Debug, Clone, PartialEq)]
enum Segment {
    Field(String),
    Index(usize),
    Filter {
        key: String,
        contains: bool,
        value: String,
    },
}

fn parse_path(path: &str) -> anyhow::Result<Vec<Segment>> {
    let mut out = Vec::new();
    let mut field = String::new();
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '.' => {
                if !field.is_empty() {
                    out.push(Segment::Field(std::mem::take(&mut field)));
                }
            }
            '[' => {
                if !field.is_empty() {
                    out.push(Segment::Field(std::mem::take(&mut field)));
                }
                let mut inner = String::new();
                let mut closed = false;
                for c in chars.by_ref() {
                    if c == ']' {
                        closed = true;
                        break;
                    }
                    inner.push(c);
                }
                if !closed {
                    bail!("unclosed [ in {path:?}");
                }
                if let Ok(n) = inner.trim().parse::<usize>() {
                    out.push(Segment::Index(n));
                } else if let Some((k, v)) = inner.split_once('~') {
                    out.push(Segment::Filter {
                        key: k.trim().to_owned(),
                        contains: true,
                        value: v.trim().to_owned(),
                    });
                } else if let Some((k, v)) = inner.split_once('=') {
                    out.push(Segment::Filter {
                        key: k.trim().to_owned(),
                        contains: false,
                        value: v.trim().to_owned(),
                    });
                } else {
                    bail!("bad [{inner}] in {path:?}");
                }
            }
            c => field.push(c),
        }
    }
    if !field.is_empty() {
        out.push(Segment::Field(field));
    }
    Ok(out)
}

fn walk<'a>(mut v: &'a Value, segments: &[Segment]) -> Option<&'a Value> {
    for s in segments {
        v = match s {
            Segment::Field(f) => v.get(f.as_str())?,
            Segment::Index(i) => v.get(*i)?,
            Segment::Filter {
                key,
                contains,
                value,
            } => v.as_array()?.iter().find(|item| {
                lookup(item, key).is_some_and(|found| {
                    let text = as_text(found);
                    if *contains {
                        text.to_lowercase().contains(&value.to_lowercase())
                    } else {
                        text == *value
                    }
                })
            })?,
        };
    }
    Some(v)
}

/// A dotted path (with indexes and filters) inside `v`.
pub fn lookup<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    let segments = parse_path(path).ok()?;
    walk(v, &segments)
}

/// The text of a field the server returns as untrusted (`{"untrusted_text": ...}`), as a
/// model reads it; any other value as it is.
fn unwrapped(v: &Value) -> &Value {
    v.get("untrusted_text").unwrap_or(v)
}

fn as_text(v: &Value) -> String {
    match unwrapped(v) {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Whether a field's value meets a condition (see [`crate::scenario::Check::filter`]).
pub fn matches(value: Option<&Value>, cond: &Value) -> bool {
    if let Value::Object(ops) = cond
        && ops.keys().all(|k| {
            matches!(
                k.as_str(),
                "contains" | "not" | "in" | "exists" | "starts_with"
            )
        })
        && !ops.is_empty()
    {
        return ops.iter().all(|(op, arg)| match op.as_str() {
            "contains" => value.is_some_and(|v| contains(v, arg)),
            "not" => !matches(value, arg),
            "in" => arg
                .as_array()
                .is_some_and(|alts| alts.iter().any(|a| matches(value, a))),
            "exists" => (value.is_some_and(|v| !v.is_null())) == (arg == &json!(true)),
            "starts_with" => value.is_some_and(|v| as_text(v).starts_with(&as_text(arg))),
            _ => false,
        });
    }
    match value {
        None => cond.is_null(),
        Some(v) => equal(v, cond),
    }
}

fn equal(a: &Value, b: &Value) -> bool {
    match (unwrapped(a), unwrapped(b)) {
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Number(_), Value::String(_)) | (Value::String(_), Value::Number(_)) => {
            as_text(a) == as_text(b)
        }
        _ => a == b,
    }
}

fn contains(v: &Value, needle: &Value) -> bool {
    match unwrapped(v) {
        Value::Array(items) => items
            .iter()
            .any(|item| equal(item, needle) || contains(item, needle)),
        Value::Null => false,
        other => as_text(other)
            .to_lowercase()
            .contains(&as_text(needle).to_lowercase()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope() -> Scope {
        let mut s = Scope {
            tenant: "acme".into(),
            ..Scope::default()
        };
        s.fixture.insert(
            "acme".into(),
            FixtureTenant {
                customers: vec![json!({"customer": "cus_1", "name": "Ada Lovelace", "email": "ada@example.com"})],
                bookings: vec![json!({"booking": "bkg_1", "service": "boiler service"})],
                technicians: vec![],
            },
        );
        s.fixture.insert(
            "globex".into(),
            FixtureTenant {
                bookings: vec![json!({"booking": "bkg_9", "service": "pipe repair"})],
                ..FixtureTenant::default()
            },
        );
        s.results.insert(
            "rc".into(),
            json!({"changes": [{"action": "create_customer", "ids": ["cus_2"]}, {"action": "create_booking", "ids": ["bkg_2"]}]}),
        );
        s.results.insert(
            "setup.q".into(),
            json!({"quote": {"quote": "quo_1", "version": "v1"}}),
        );
        s
    }

    #[test]
    fn resolves_fixture_and_path_references() {
        let s = scope();
        assert_eq!(s.resolve("customer:ada lovelace").unwrap(), json!("cus_1"));
        assert_eq!(s.resolve("booking:boiler service").unwrap(), json!("bkg_1"));
        assert_eq!(
            s.resolve("globex.booking:pipe repair").unwrap(),
            json!("bkg_9")
        );
        assert_eq!(
            s.resolve("rc.changes[action=create_booking].ids[0]")
                .unwrap(),
            json!("bkg_2")
        );
        assert_eq!(s.resolve("setup.q.quote.quote").unwrap(), json!("quo_1"));
        assert!(s.resolve("customer:Nobody").is_err());
        assert!(s.resolve("missing.x").is_err());
    }

    #[test]
    fn renders_templates() {
        let s = scope();
        let v = s
            .render(&json!({"customer": "{{customer:Ada Lovelace}}", "text": "hi {{setup.q.quote.quote}}!", "n": 3}))
            .unwrap();
        assert_eq!(v, json!({"customer": "cus_1", "text": "hi quo_1!", "n": 3}));
    }

    #[test]
    fn conditions() {
        let v = json!({"state": "draft", "start": {"local": "2055-05-06 09:00"}, "notes": ["Bring the long ladder."], "n": 90});
        assert!(matches(lookup(&v, "state"), &json!("draft")));
        assert!(matches(lookup(&v, "n"), &json!("90")));
        assert!(matches(
            lookup(&v, "start.local"),
            &json!({"starts_with": "2055-05-06"})
        ));
        assert!(matches(lookup(&v, "notes"), &json!({"contains": "LADDER"})));
        assert!(matches(lookup(&v, "state"), &json!({"not": "cancelled"})));
        assert!(matches(
            lookup(&v, "state"),
            &json!({"in": ["draft", "confirmed"]})
        ));
        assert!(matches(lookup(&v, "missing"), &json!({"exists": false})));
        assert!(!matches(lookup(&v, "state"), &json!("confirmed")));
    }
}
