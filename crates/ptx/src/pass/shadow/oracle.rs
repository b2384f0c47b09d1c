//! The CPU oracle of the shadow pass: the statistics the instrumented kernel must produce,
//! computed independently by running the original kernel in [`crate::interp`].
