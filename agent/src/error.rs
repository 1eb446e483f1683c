//! Why a configuration was refused, and the range check every section's `validate` uses.
//!
//! A module of its own so that each module's config (policy, weights, cp) can return it without
//! importing [`crate::config`], which imports those configs to compose the agent's file.

/// Why a configuration was refused.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The text is not valid TOML for this schema (syntax, type, unknown key).
    #[error("invalid configuration: {0}")]
    Toml(#[from] toml::de::Error),
    /// A numeric constant is outside its valid range.
    #[error("{field} = {value} is out of range: {expected}")]
    OutOfRange {
        /// Dotted key, e.g. `policy.gd`.
        field: &'static str,
        /// The value given.
        value: f64,
        /// The valid range, in words.
        expected: &'static str,
    },
    /// A `KEY=VALUE` override is malformed (no `=`, an empty key, or a key under a value).
    #[error("bad setting {0:?}: expected section.key=VALUE (VALUE in TOML syntax)")]
    Setting(String),
    /// Two constants contradict each other.
    #[error("inconsistent configuration: {0}")]
    Inconsistent(&'static str),
}

/// `Ok` when `ok`, else [`ConfigError::OutOfRange`] for `field`.
pub(crate) fn check(
    ok: bool,
    field: &'static str,
    value: f64,
    expected: &'static str,
) -> Result<(), ConfigError> {
    if ok {
        Ok(())
    } else {
        Err(ConfigError::OutOfRange {
            field,
            value,
            expected,
        })
    }
}

/// A `u64` constant as [`ConfigError::OutOfRange::value`].
#[allow(clippy::cast_precision_loss)] // values only reported in error messages
pub(crate) fn as_f64(v: u64) -> f64 {
    v as f64
}
