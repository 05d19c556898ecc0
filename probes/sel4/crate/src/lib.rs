// empty: this crate only pins sel4-sys (Cargo.toml)
