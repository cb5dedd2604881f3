//! [`Swap`]: a shared component a service calls through and a test can replace while the
//! service runs (the WOL network, the BMC protocol client, the diagnostics prober: real
//! sockets in the server, recording fakes in router tests, so nothing leaves the process).
//! Holds no global state.

use std::sync::{Arc, RwLock};

/// An `Arc<T>` behind a lock: [`Swap::get`] hands out the current one (runs already
/// started keep theirs), [`Swap::set`] replaces it. A poisoned lock is recovered: the value
/// is a plain `Arc`, never left half-written.
pub struct Swap<T: ?Sized>(RwLock<Arc<T>>);

impl<T: ?Sized> Swap<T> {
    /// Starts with `value`.
    pub fn new(value: Arc<T>) -> Self {
        Self(RwLock::new(value))
    }

    /// The current value.
    pub fn get(&self) -> Arc<T> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Replaces the value.
    pub fn set(&self, value: Arc<T>) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_hands_out_the_current_value_and_set_replaces_it() {
        let s: Swap<dyn Fn() -> u8 + Send + Sync> = Swap::new(Arc::new(|| 1));
        let old = s.get();
        s.set(Arc::new(|| 2));
        assert_eq!((old(), s.get()()), (1, 2));
    }
}
