pub mod count;
