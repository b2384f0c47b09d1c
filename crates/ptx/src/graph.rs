//! Def-use graph (in progress).
