//! TODO(owner): see mod.rs
