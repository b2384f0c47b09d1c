//! Setting `__constant__` and `__device__` variables before a run.
//!
//! STAND-IN until `mantissa-gpu` has a symbol API: [`mantissa_gpu::Module`] does not expose its
//! `CudaModule`, so `cuModuleGetGlobal` cannot be reached from here. Instead the values become
//! the variables' initialisers in the PTX (`.const .align 8 .b8 coef[24] = {0, 0, ...};`), and the
//! module is loaded from that PTX, so the driver sets them when it loads the module. Each repeat
//! of a timed run reloads the module when the program has `.global` variables, so a kernel that
//! writes one starts every repeat from the same state. When gpu gains
//! `Module::write_symbol(name, &[u8])`, [`prepare_ptx`] becomes the identity and
//! [`crate::exec`] writes the bytes after loading instead; nothing else changes.

use crate::validate::ResolvedSymbol;
use mantissa_ptx::Item;

/// The PTX with each symbol's bytes as its variable's initialiser. The declaration becomes a
/// `.b8` array of the same size and alignment (kernels address variables, so the declared
/// element type does not change their code).
pub fn prepare_ptx(ptx: &str, symbols: &[(ResolvedSymbol, Vec<u8>)]) -> Result<String, String> {
    if symbols.is_empty() {
        return Ok(ptx.to_string());
    }
    let mut parsed = mantissa_ptx::parse(ptx);
    for (sym, bytes) in symbols {
        let var = parsed.module.items.iter_mut().find_map(|it| match it {
            Item::Var(v) if v.name == sym.ptx_name => Some(v),
            _ => None,
        });
        let Some(v) = var else {
            return Err(format!("the PTX has no variable {}", sym.ptx_name));
        };
        if v.attrs.iter().any(|a| a == ".extern") {
            return Err(format!(
                "{} is declared .extern (defined in another module)",
                sym.ptx_name
            ));
        }
        let ty_at = v
            .attrs
            .iter()
            .position(|a| a.strip_prefix('.').is_some_and(mantissa_ptx::is_type));
        let Some(ty_at) = ty_at else {
            return Err(format!("{} has no element type", sym.ptx_name));
        };
        let width = v.attrs[ty_at]
            .strip_prefix('.')
            .and_then(mantissa_ptx::type_bytes)
            .unwrap_or(1);
        v.attrs[ty_at] = ".b8".to_string();
        if !v.attrs.iter().any(|a| a == ".align") {
            v.attrs.insert(ty_at, width.to_string());
            v.attrs.insert(ty_at, ".align".to_string());
        }
        v.dims = vec![Some(bytes.len() as u64)];
        let list: Vec<String> = bytes.iter().map(u8::to_string).collect();
        v.init = Some(format!("{{{}}}", list.join(", ")));
    }
    Ok(parsed.module.to_string())
}

/// Whether the program has `.global` variables a kernel could change between repeats.
pub fn has_global_variables(ptx: &str) -> bool {
    crate::validate::module_variables(ptx)
        .iter()
        .any(|v| v.1 == ".global")
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "//\n.version 8.5\n.target sm_90\n.address_size 64\n\n.const .align 8 .b8 coef[24];\n.global .align 8 .f64 total;\n\n.visible .entry k(\n\t.param .u64 k_param_0\n)\n{\n\tret;\n}\n";

    fn sym(name: &str, bytes: usize) -> ResolvedSymbol {
        ResolvedSymbol {
            name: name.into(),
            ptx_name: name.into(),
            space: ".const".into(),
            bytes,
        }
    }

    #[test]
    fn values_become_initialisers() {
        let mut coef = Vec::new();
        for x in [0.25f64, 0.5, 0.25] {
            coef.extend_from_slice(&x.to_le_bytes());
        }
        let out = prepare_ptx(
            PTX,
            &[
                (sym("coef", 24), coef),
                (sym("total", 8), 1.0f64.to_le_bytes().to_vec()),
            ],
        )
        .unwrap();
        assert!(
            out.contains(".const .align 8 .b8 coef[24] = {0, 0, 0, 0, 0, 0, 208, 63,"),
            "{out}"
        );
        assert!(
            out.contains(".global .align 8 .b8 total[8] = {0, 0, 0, 0, 0, 0, 240, 63}"),
            "{out}"
        );
        // The rewritten module still declares both, with the sizes the checks expect.
        let vars = crate::validate::module_variables(&out);
        assert_eq!(
            vars,
            vec![
                ("coef".into(), ".const".into(), Some(24)),
                ("total".into(), ".global".into(), Some(8))
            ]
        );
        assert!(has_global_variables(PTX));
        assert_eq!(prepare_ptx(PTX, &[]).unwrap(), PTX);
    }
}
