//! The settings of a source that decide what an action writes (a SQL table and its columns,
//! a key prefix, a server's dialect), in its store's own type (`Store::Target`, in the
//! store's folder): a request carries them here without knowing the store, and only that
//! store reads them. `backend::target` reads them from a source's config; the dashboard gets
//! them from the runtime, so the dialog names the columns that will be written. What they
//! are without a config (the demo, tests) is each store's (`backend::default_target`).

use std::sync::Arc;

use super::StoreValue;

/// One store's settings, as the request of an action carries them.
#[derive(Clone, Debug)]
pub struct Target(Arc<dyn StoreValue>);

impl Target {
    /// The settings `t`, of its store's own type.
    pub fn of(t: impl StoreValue) -> Target {
        Target(Arc::new(t))
    }

    /// The settings as the store's own type `T`, or `None` if they are another store's.
    pub fn get<T: std::any::Any>(&self) -> Option<&T> {
        self.0.downcast_ref()
    }

    /// Whether these are settings of type `T` (of `T`'s store).
    pub fn is<T: std::any::Any>(&self) -> bool {
        self.get::<T>().is_some()
    }
}
