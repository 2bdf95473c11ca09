//! The names of a deployment's store objects (ADR 51): `t:<tenant>` for each workspace and
//! `global` for what belongs to no workspace, each after a prefix that is empty in a deployment
//! and, in the test build only, names the test (so that tests sharing one served worker never
//! share an object, the global one included).

use store::routed::Object;

/// The global object's name after the prefix.
const GLOBAL: &str = "global";
/// What begins a workspace object's name after the prefix.
const WORKSPACE: &str = "t:";
/// The one object of a deployment made before ADR 51, which held every item.
const BEFORE_ADR_51: &str = "store";

/// The object names of one deployment (or one test).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Names {
    prefix: String,
}

impl Names {
    /// The names after `prefix` (empty in a deployment).
    pub(crate) fn new(prefix: impl Into<String>) -> Self {
        Names {
            prefix: prefix.into(),
        }
    }

    /// The name of `object`.
    pub(crate) fn of(&self, object: &Object) -> String {
        match object {
            Object::Workspace(tenant) => format!("{}{WORKSPACE}{tenant}", self.prefix),
            Object::Global => self.global(),
        }
    }

    /// The full name of the object `relative` names (`global`, `t:<tenant>`, or a deployment's
    /// one object from before ADR 51, `store`); `None` for any other.
    pub(crate) fn named(&self, relative: &str) -> Option<String> {
        let known = relative == GLOBAL
            || relative == BEFORE_ADR_51
            || relative
                .strip_prefix(WORKSPACE)
                .is_some_and(|t| store::tenant_id::check(t).is_ok());
        known.then(|| format!("{}{relative}", self.prefix))
    }

    /// The global object's name.
    pub(crate) fn global(&self) -> String {
        format!("{}{GLOBAL}", self.prefix)
    }
}

/// What an object is, from its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Role {
    /// A workspace's object; its deployment's names.
    Workspace(Names),
    /// The global object (or an object of no role: it keeps no copy of the switch).
    Global,
}

impl Role {
    /// The role of the object named `name`.
    pub(crate) fn of(name: &str) -> Role {
        // Tenant ids never hold ':' (store::tenant_id), so the last one ends the marker.
        if let Some((head, _tenant)) = name.rsplit_once(':')
            && let Some(prefix) = head.strip_suffix('t')
        {
            return Role::Workspace(Names::new(prefix));
        }
        Role::Global
    }
}
