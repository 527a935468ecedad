//! What a plan holds of one store without knowing which: its steps, each in the store's own
//! type, read here only through [`StoreStep`] (the confirmation's words), and by the store
//! that made them through [`Plan::steps_of`] (what it executes); its read-back and a
//! request's target, the same way ([`StoreValue`]).

use std::any::Any;
use std::fmt::Debug;
use std::sync::Arc;

use super::Plan;

/// A value of one store's own type in a plan or a request (a step, the read-back, the
/// target), held without knowing the store: only that store reads it, by
/// [`downcast_ref`](dyn StoreValue::downcast_ref). Any plain value with `Debug` and
/// `PartialEq` is one.
pub trait StoreValue: Any + Debug + Send + Sync {
    /// Whether `other` is this same value, of this same type (plans compare in tests).
    fn same(&self, other: &dyn StoreValue) -> bool;
}

impl<T: Any + Debug + Send + Sync + PartialEq> StoreValue for T {
    fn same(&self, other: &dyn StoreValue) -> bool {
        (other as &dyn Any).downcast_ref::<T>() == Some(self)
    }
}

impl dyn StoreValue {
    /// The value as its store's own type, or `None` if it is another store's.
    pub fn downcast_ref<T: Any>(&self) -> Option<&T> {
        (self as &dyn Any).downcast_ref()
    }
}

impl PartialEq for dyn StoreValue {
    fn eq(&self, other: &dyn StoreValue) -> bool {
        self.same(other)
    }
}

impl Eq for dyn StoreValue {}

/// One store operation of a plan, in its store's own type: what the confirmation says of
/// it here, what it carries for the store that executes it there.
pub trait StoreStep: StoreValue {
    /// The operation in one line, as it will be sent (the confirmation's "will write").
    fn line(&self) -> String;

    /// The same for the details view, where a step that compares several things may give
    /// each its own line.
    fn lines(&self) -> Vec<String> {
        vec![self.line()]
    }
}

impl dyn StoreStep {
    /// The step as its store's own type, or `None` if it is another store's.
    pub fn downcast_ref<T: Any>(&self) -> Option<&T> {
        (self as &dyn Any).downcast_ref()
    }
}

impl PartialEq for dyn StoreStep {
    fn eq(&self, other: &dyn StoreStep) -> bool {
        self.same(other as &dyn StoreValue)
    }
}

impl Eq for dyn StoreStep {}

/// A plan's step, shared between the plan the confirmation shows and the one executed.
pub type Step = Arc<dyn StoreStep>;

/// `s` as a plan's step.
pub fn step(s: impl StoreStep) -> Step {
    Arc::new(s)
}

impl Plan {
    /// The steps as the store `S`'s own, in order; or, if one is another store's (the
    /// request was planned for another kind of source), that step in words.
    pub fn steps_of<S: StoreStep>(&self) -> Result<Vec<&S>, String> {
        self.steps
            .iter()
            .map(|s| {
                s.downcast_ref::<S>()
                    .ok_or_else(|| format!("the step `{}` is another store's", s.line()))
            })
            .collect()
    }

    /// The plan's one step, as the store `S`'s own; or why it is not one such step.
    pub fn only_step_of<S: StoreStep>(&self) -> Result<&S, String> {
        match self.steps_of::<S>()?.as_slice() {
            [one] => Ok(*one),
            steps => Err(format!("{} steps, where one was planned", steps.len())),
        }
    }

    /// The read-back as the store's own type `R`, if it is that store's.
    pub fn readback_of<R: Any>(&self) -> Option<&R> {
        self.readback.downcast_ref()
    }
}
