//! Search strategies over units: they call [`crate::Evaluate::trial`] and know nothing else.
