//! A world whose store notes every key a request asks for, to check where a kind of request
//! reaches: its workspace's items alone, or the deployment's too (ADR 51, ADR 53).

use std::sync::{Arc, Mutex};

use crate::support::faults::{Call, FaultyStore, Op};
use crate::support::store::{Backend, fresh};
use crate::world::World;

/// The keys asked for since the last [`Noted::take`], with their operation.
#[derive(Clone, Default)]
pub(crate) struct Noted(Arc<Mutex<Vec<(Op, store::Key)>>>);

impl Noted {
    /// What was asked for since the last call, and forgets it.
    pub(crate) fn take(&self) -> Vec<(Op, store::Key)> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }

    /// The keys taken that belong to the deployment (the global object at the edge), shown as
    /// `op pk/sk`.
    pub(crate) fn global_since(&self) -> Vec<String> {
        self.take()
            .into_iter()
            .filter(|(_, k)| store::placement::place(k) == store::placement::Place::Global)
            .map(|(op, k)| format!("{op:?} {}/{}", k.pk, k.sk))
            .collect()
    }

    /// The workspaces the keys taken belong to, each once.
    pub(crate) fn workspaces_since(&self) -> Vec<String> {
        let mut seen: Vec<String> = self
            .take()
            .iter()
            .filter_map(|(_, k)| match store::placement::place(k) {
                store::placement::Place::Workspace(t) => Some(t.to_owned()),
                _ => None,
            })
            .collect();
        seen.sort();
        seen.dedup();
        seen
    }
}

/// A world and what its store was asked for.
pub(crate) struct NotedWorld {
    pub(crate) world: World,
    pub(crate) noted: Noted,
}

/// A world on a fresh `backend` store whose every call is noted; `None` where the backend is
/// not available outside CI.
pub(crate) async fn noted_world(backend: Backend) -> Option<NotedWorld> {
    let (inner, dir) = fresh(backend).await?;
    let faulty = FaultyStore::new(inner);
    let noted = Noted::default();
    let into = noted.clone();
    faulty.watch(move |call: &Call| {
        let mut keys = into.0.lock().unwrap();
        keys.extend(call.keys.iter().map(|k| (call.op, k.clone())));
    });
    let settings = app::Settings {
        backend: backend.name().into(),
        ..World::settings()
    };
    let world = World::on_store(backend, faulty, dir, &settings);
    Some(NotedWorld { world, noted })
}
