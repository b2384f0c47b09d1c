//! Census (in progress).
