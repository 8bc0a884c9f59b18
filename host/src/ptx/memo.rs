//! Once per process: deterministic, costly answers (a ptxas run, a module's line tables) that
//! many commands and tests ask for with the same input.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::Result;

type Cell<V> = Arc<OnceLock<Result<Arc<V>, String>>>;

/// Answers by the hash of their question (SipHash, 64 bits, over every input that decides the
/// answer). Callers asking at once for the same answer wait for the one computation; a failure
/// is kept too, as its message (`{:#}`: the whole context chain).
pub struct Memo<V> {
    answers: OnceLock<Mutex<HashMap<u64, Cell<V>>>>,
}

impl<V> Memo<V> {
    /// An empty memo, for a `static`.
    pub const fn new() -> Self {
        Self { answers: OnceLock::new() }
    }

    /// The answer to `question`, computed by `compute` the first time it is asked.
    ///
    /// # Errors
    /// The error `compute` gave, the first time or now.
    pub fn get(&self, question: impl Hash, compute: impl FnOnce() -> Result<V>) -> Result<Arc<V>> {
        let mut hasher = DefaultHasher::new();
        question.hash(&mut hasher);
        let cell = {
            let answers = self.answers.get_or_init(Default::default);
            // A panic elsewhere while holding the lock leaves the map itself whole.
            let mut answers = answers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            answers.entry(hasher.finish()).or_default().clone()
        };
        let answer = cell.get_or_init(|| compute().map(Arc::new).map_err(|e| format!("{e:#}")));
        answer.clone().map_err(anyhow::Error::msg)
    }
}

impl<V> Default for Memo<V> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn each_question_is_computed_once_and_a_failure_is_remembered() {
        static MEMO: Memo<String> = Memo::new();
        let runs = AtomicUsize::new(0);
        let ask = |q: &str| {
            MEMO.get(q, || {
                runs.fetch_add(1, Ordering::Relaxed);
                if q == "bad" { anyhow::bail!("refused: {q}") } else { Ok(q.to_uppercase()) }
            })
        };
        assert_eq!(*ask("ptx").unwrap(), "PTX");
        assert_eq!(*ask("ptx").unwrap(), "PTX");
        assert_eq!(*ask("sass").unwrap(), "SASS");
        assert_eq!(ask("bad").unwrap_err().to_string(), "refused: bad");
        assert_eq!(ask("bad").unwrap_err().to_string(), "refused: bad");
        assert_eq!(runs.load(Ordering::Relaxed), 3);
    }
}
