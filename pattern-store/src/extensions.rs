//! What the patterns remember per store in this process, each under a key of its own: a store
//! holds one [`Extensions`] and knows nothing of what is in it.

use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// How many extension types a process may use at most (each pattern uses one or two).
const MAX_EXTENSIONS: usize = 32;

/// A value a pattern keeps in every store it is used with: the indexes it ensured, what it
/// learned of a series... Created empty on first use ([`Default`]); [`Extension::forget`]
/// empties it when the store's collections were dropped behind its back.
pub trait Extension: Any + Send + Sync + Default {
    /// Forgets what it remembers, as after a new start.
    fn forget(&self);
}

/// The key of one extension type: a `static` of the pattern that owns it.
///
/// ```
/// use std::sync::Mutex;
/// use pattern_core::store::{Extension, ExtensionKey, Store};
///
/// #[derive(Default)]
/// struct Seen(Mutex<Vec<String>>);
/// impl Extension for Seen {
///     fn forget(&self) {
///         self.0.lock().unwrap().clear();
///     }
/// }
/// static SEEN: ExtensionKey<Seen> = ExtensionKey::new();
///
/// let store = pattern_core::MemoryStore::new();
/// store.extensions().get(&SEEN).0.lock().unwrap().push("books".into());
/// assert_eq!(store.extensions().get(&SEEN).0.lock().unwrap().len(), 1);
/// ```
pub struct ExtensionKey<T> {
    /// The slot, assigned on first use (`usize::MAX` until then).
    slot: AtomicUsize,
    of: PhantomData<fn() -> T>,
}

impl<T> ExtensionKey<T> {
    /// A new key (for a `static`).
    pub const fn new() -> Self {
        ExtensionKey {
            slot: AtomicUsize::new(usize::MAX),
            of: PhantomData,
        }
    }

    /// Its slot, assigned once for the process.
    fn slot(&self) -> usize {
        let s = self.slot.load(Ordering::Acquire);
        if s != usize::MAX {
            return s;
        }
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let mine = NEXT.fetch_add(1, Ordering::Relaxed);
        assert!(
            mine < MAX_EXTENSIONS,
            "more than {MAX_EXTENSIONS} extension types in one process"
        );
        match (self.slot).compare_exchange(usize::MAX, mine, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => mine,
            // Another thread assigned it first (the slot taken here stays unused).
            Err(theirs) => theirs,
        }
    }
}

impl<T> Default for ExtensionKey<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// The extensions of one store: one slot per [`ExtensionKey`], filled on first use. Lookups
/// take no lock (an atomic load and a type check), so a pattern may read its extension on every
/// operation.
pub struct Extensions {
    slots: [OnceLock<Box<dyn Forget>>; MAX_EXTENSIONS],
}

/// [`Extension`] as an object (`Default` aside).
trait Forget: Any + Send + Sync {
    fn forget(&self);
}

impl<T: Extension> Forget for T {
    fn forget(&self) {
        Extension::forget(self);
    }
}

impl Default for Extensions {
    fn default() -> Self {
        Extensions {
            slots: std::array::from_fn(|_| OnceLock::new()),
        }
    }
}

impl Extensions {
    /// The store's `T`, created empty on first use.
    pub fn get<T: Extension>(&self, key: &'static ExtensionKey<T>) -> &T {
        let slot = &self.slots[key.slot()];
        let value: &dyn Forget = slot.get_or_init(|| Box::new(T::default())).as_ref();
        let any: &dyn Any = value;
        any.downcast_ref::<T>()
            .expect("an extension key holds values of its own type")
    }

    /// Forgets everything every extension remembers (after the store's collections were
    /// dropped behind its back).
    pub fn forget(&self) {
        for slot in &self.slots {
            if let Some(ext) = slot.get() {
                ext.forget();
            }
        }
    }
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let used = self.slots.iter().filter(|s| s.get().is_some()).count();
        f.debug_struct("Extensions").field("used", &used).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Names(Mutex<Vec<&'static str>>);
    impl Extension for Names {
        fn forget(&self) {
            self.0.lock().unwrap().clear();
        }
    }
    #[derive(Default)]
    struct Count(AtomicUsize);
    impl Extension for Count {
        fn forget(&self) {
            self.0.store(0, Ordering::Relaxed);
        }
    }
    static NAMES: ExtensionKey<Names> = ExtensionKey::new();
    static COUNT: ExtensionKey<Count> = ExtensionKey::new();

    #[test]
    fn each_key_its_own_value_per_store_until_forgotten() {
        let (a, b) = (Extensions::default(), Extensions::default());
        a.get(&NAMES).0.lock().unwrap().push("x");
        a.get(&COUNT).0.fetch_add(2, Ordering::Relaxed);
        assert_eq!(*a.get(&NAMES).0.lock().unwrap(), ["x"]);
        assert_eq!(a.get(&COUNT).0.load(Ordering::Relaxed), 2);
        assert!(b.get(&NAMES).0.lock().unwrap().is_empty(), "another store");
        a.forget();
        assert!(a.get(&NAMES).0.lock().unwrap().is_empty());
        assert_eq!(a.get(&COUNT).0.load(Ordering::Relaxed), 0);
    }
}
