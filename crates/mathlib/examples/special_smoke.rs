use mantissa_mathlib::reference::{approx, reference, Approx};
use mantissa_mathlib::{Format, Function};
use std::time::Instant;

fn main() {
    let cases: &[(Function, f64)] = &[
        (Function::Erf, 1.0), (Function::Erf, 0.5), (Function::Erf, 3.0), (Function::Erf, 1e-300),
        (Function::Erfc, 1.0), (Function::Erfc, 5.0), (Function::Erfc, 27.0), (Function::Erfc, 1e5),
        (Function::Erfc, -1.0),
        (Function::Erfinv, 0.5), (Function::Erfinv, 1.0 - 2f64.powi(-53)), (Function::Erfinv, 1e-310),
        (Function::Lgamma, 0.5), (Function::Lgamma, 1.0 - 2f64.powi(-53)), (Function::Lgamma, -2.5),
        (Function::Lgamma, 1e308), (Function::Lgamma, -100.5), (Function::Lgamma, 3.0),
        (Function::Tgamma, 0.5), (Function::Tgamma, 5.5), (Function::Tgamma, -0.5), (Function::Tgamma, 171.5),
        (Function::Tgamma, -100.5), (Function::Tgamma, 1e-300), (Function::Tgamma, 1e6 + 0.5),
    ];
    for &(f, x) in cases {
        let t = Instant::now();
        let r = reference(f, &[x], Format::F64);
        let dt = t.elapsed();
        match r {
            Ok(r) => println!("{}({x:e}) = {:e} [bits {}] libm {:e}  {:.1} us", f.name(), r.rounded, r.bits, libm_of(f, x), dt.as_secs_f64() * 1e6),
            Err(e) => println!("{}({x:e}) undecided {e}", f.name()),
        }
        if let Approx::Near { value, err_log2 } = approx(f, &[x], 128) {
            let _ = (value, err_log2);
        }
    }
}

fn libm_of(f: Function, x: f64) -> f64 {
    match f {
        Function::Erf => libm::erf(x),
        Function::Erfc => libm::erfc(x),
        Function::Lgamma => libm::lgamma(x),
        Function::Tgamma => libm::tgamma(x),
        _ => f64::NAN,
    }
}
