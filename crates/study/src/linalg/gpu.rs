//! The GPU runs of GE and LU: the CUDA twin's kernels, resource checks before launching,
//! launches timed by events, and the f64x2 residual on the device.

use super::*;

// ---- GPU runs ----------------------------------------------------------------------------------

/// Device bytes a GPU point allocates: the input and working copies, plus (LU) the f64x2
/// factors, input, residual and reference factorization of the accuracy check.
pub fn device_bytes(point: &Point) -> u64 {
    let n = point.size;
    let v = match point.precision {
        StudyPrecision::Real(p) => DeviceType::of(p).map_or(0, DeviceType::bytes),
        StudyPrecision::Exact => 0,
    };
    match point.workload {
        "ge" => 2 * (n * n + n) * v,
        _ => 2 * n * n * v + n * n * (16 + 16 + 8 + 2 * 16),
    }
}

/// What a kernel configuration needs per block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockNeeds {
    /// Threads per block.
    pub threads: u32,
    /// Static shared memory per block, in bytes.
    pub static_shared_bytes: u32,
}

/// The LU kernels' needs at tile b for values of `value_bytes` bytes (all three kernels run b×b
/// threads with two b×b tiles of shared memory).
pub fn lu_needs(tile: u32, value_bytes: u32) -> BlockNeeds {
    BlockNeeds {
        threads: tile * tile,
        static_shared_bytes: 2 * tile * tile * value_bytes,
    }
}

/// Fan2's needs at tile b.
pub fn fan2_needs(tile: u32) -> BlockNeeds {
    BlockNeeds {
        threads: tile * tile,
        static_shared_bytes: 0,
    }
}

/// Why `needs` cannot run on a device allowing `max_threads` per block and
/// [`STATIC_SHARED_LIMIT`] bytes of static shared memory; `None` if it can.
pub fn out_of_resources(what: &str, needs: BlockNeeds, max_threads: u32) -> Option<String> {
    if needs.threads > max_threads {
        Some(format!(
            "out of resources: {what}: {} threads per block, the device allows {max_threads}",
            needs.threads
        ))
    } else if needs.static_shared_bytes > STATIC_SHARED_LIMIT {
        Some(format!(
            "out of resources: {what}: {} bytes of shared memory per block, a block may declare {STATIC_SHARED_LIMIT}",
            needs.static_shared_bytes
        ))
    } else {
        None
    }
}

/// The CUDA source of precision T's kernels (and the f64x2 residual kernel).
pub fn linalg_source<T: DeviceWords>() -> Source {
    let p = T::precision_name();
    Source::new(
        format!("linalg_{p}.cu"),
        format!(
            "{}\n{}\nMANTISSA_LINALG_KERNELS({p}, {}, {})\nMANTISSA_LINALG_CHECK()\n",
            twin::HEADER,
            LINALG_CU,
            T::CUDA_TYPE,
            T::Word::CUDA
        ),
    )
}

/// The kernel names of precision T: Fan1, Fan2, and per LU tile (diagonal, perimeter, internal).
pub fn ge_kernels<T: DeviceWords>() -> [String; 2] {
    let p = T::precision_name();
    [format!("ge_fan1_{p}"), format!("ge_fan2_{p}")]
}

/// The LU kernel names of precision T at tile b: diagonal, perimeter, internal.
pub fn lu_kernels<T: DeviceWords>(tile: u32) -> [String; 3] {
    let p = T::precision_name();
    [
        format!("lu_diagonal_{p}_{tile}"),
        format!("lu_perimeter_{p}_{tile}"),
        format!("lu_internal_{p}_{tile}"),
    ]
}

/// The name of the residual kernel (in every precision's module).
pub const RESIDUAL_KERNEL: &str = "lu_residual_f64x2";

/// The exact f64x2 of a device value: TwoSum of its words (exact for every pair type).
pub fn device_pair<T: DeviceWords>(x: &T) -> f64x2 {
    let mut w: Vec<T::Word> = Vec::with_capacity(2);
    x.push_words(&mut w);
    // (One small allocation per value; the LU check converts n² values once per precision.)
    let word = |k: usize| -> f64 {
        match T::Word::DTYPE {
            DType::F32 => f32::from_bits(w[k].bits() as u32) as f64,
            _ => f64::from_bits(w[k].bits()),
        }
    };
    if w.len() == 1 {
        f64x2::from_parts(word(0), 0.0)
    } else {
        let (a, b) = (word(0), word(1));
        if a.is_finite() && b.is_finite() {
            f64x2::from_sum(a, b)
        } else {
            f64x2::from_parts(a + b, 0.0)
        }
    }
}

fn pair_words(xs: &[f64x2]) -> HostData {
    let mut w = Vec::with_capacity(2 * xs.len().max(1));
    for x in xs {
        w.push(x.hi);
        w.push(x.lo);
    }
    if w.is_empty() {
        w.extend([0.0, 0.0]);
    }
    HostData::F64(w)
}

fn module_for<'m, T: DeviceWords>(
    gpu: &Gpu,
    modules: &'m mut HashMap<String, Module>,
) -> Result<&'m Module, GpuError> {
    let p = T::precision_name();
    if !modules.contains_key(&p) {
        let m = gpu.build(&linalg_source::<T>(), FLAGS)?;
        modules.insert(p.clone(), m);
    }
    Ok(&modules[&p])
}

/// Queues the whole blocked LU of the n×n matrix in `a` with tile `tile`.
fn launch_lu(
    gpu: &Gpu,
    module: &Module,
    kernels: &[String; 3],
    a: &DeviceBuffer,
    n: usize,
    tile: u32,
) -> Result<(), GpuError> {
    let steps = n / tile as usize;
    let block = (tile, tile, 1);
    for s in 0..steps {
        let o = (s * tile as usize) as i32;
        let m = (steps - s - 1) as u32;
        let args = [
            KernelArg::from(a),
            KernelArg::Scalar(Scalar::I32(n as i32)),
            KernelArg::Scalar(Scalar::I32(o)),
        ];
        gpu.launch(
            module,
            &kernels[0],
            LaunchDims::new((1, 1, 1), block),
            &args,
        )?;
        if m > 0 {
            gpu.launch(
                module,
                &kernels[1],
                LaunchDims::new((2 * m, 1, 1), block),
                &args,
            )?;
            gpu.launch(
                module,
                &kernels[2],
                LaunchDims::new((m, m, 1), block),
                &args,
            )?;
        }
    }
    Ok(())
}

/// Runs this module's GPU points, keeping compiled modules and references between points.
pub struct GpuRunner<'g> {
    gpu: &'g Gpu,
    modules: HashMap<String, Module>,
    ge_refs: RefCache<GeReference>,
    lu_refs: RefCache<LuReference>,
    /// The last LU accuracy: (point key without backend, hash of the factors, its measurement).
    lu_last: Option<(String, u64, Measurement)>,
    /// The last system generated, by (input, n, seed): points of every precision and tile share it.
    system: Option<((String, usize, u64), Arc<System>)>,
}

impl GpuMeasure for GpuRunner<'_> {
    fn measure(&mut self, point: &Point, timing: TimingOptions) -> Result<Measurement, GpuError> {
        let StudyPrecision::Real(p) = point.precision else {
            return Err(bad_point(point, "needs a real precision"));
        };
        let run = RunOn {
            runner: self,
            point,
            timing,
        };
        visit_device_type(p, run)
            .unwrap_or_else(|| Err(bad_point(point, "mp does not run on the GPU")))
    }
}

/// A GPU point in its precision's device type.
struct RunOn<'r, 'g, 'p> {
    runner: &'r mut GpuRunner<'g>,
    point: &'p Point,
    timing: TimingOptions,
}

impl DeviceTypeVisitor for RunOn<'_, '_, '_> {
    type Output = Result<Measurement, GpuError>;
    fn visit<T: DeviceWords>(self) -> Self::Output {
        self.runner.run::<T>(self.point, self.timing)
    }
}

impl<'g> GpuRunner<'g> {
    /// A runner for `gpu`; nothing is compiled until a point needs it.
    pub fn new(gpu: &'g Gpu) -> Self {
        GpuRunner {
            gpu,
            modules: HashMap::new(),
            ge_refs: RefCache::new(),
            lu_refs: RefCache::new(),
            lu_last: None,
            system: None,
        }
    }

    fn run<T: DeviceWords>(
        &mut self,
        point: &Point,
        timing: TimingOptions,
    ) -> Result<Measurement, GpuError> {
        let (Backend::GpuTiles { tile }, Data::Intervals(class)) = (point.backend, &point.data)
        else {
            return Err(bad_point(point, "needs a tile backend and interval data"));
        };
        let n = point.size as usize;
        let max_threads = self.gpu.info().max_threads_per_block;
        let ge = point.workload == "ge";
        let (what, needs) = if ge {
            ("Fan2", fan2_needs(tile))
        } else {
            ("the LU kernels", lu_needs(tile, T::TYPE.bytes() as u32))
        };
        if let Some(why) = out_of_resources(&format!("{what} at {tile}×{tile}"), needs, max_threads)
        {
            return Ok(Measurement::out_of_resources(why));
        }
        if (!ge && (!LU_KERNEL_TILES.contains(&tile) || n % tile as usize != 0)) || n < 2 {
            return Err(bad_point(point, "has no kernels for this tile and size"));
        }
        // Registers lower a compiled kernel's thread limit below the device's.
        let module = module_for::<T>(self.gpu, &mut self.modules)?;
        let launches: Vec<(String, u32)> = if ge {
            let [fan1, fan2] = ge_kernels::<T>();
            vec![(fan1, FAN1_BLOCK), (fan2, needs.threads)]
        } else {
            lu_kernels::<T>(tile)
                .into_iter()
                .map(|k| (k, needs.threads))
                .collect()
        };
        for (k, threads) in &launches {
            let r = module.resources(k)?;
            if r.max_threads_per_block < *threads {
                return Ok(Measurement::out_of_resources(format!(
                    "out of resources: {k} uses {} registers per thread, so at most {} threads per block, {threads} needed",
                    r.registers, r.max_threads_per_block
                )));
            }
        }
        let id = (class.name.clone(), n, point.seed);
        let sys = match &self.system {
            Some((k, sys)) if *k == id => sys.clone(),
            _ => {
                let sys = Arc::new(system(class, n, point.seed));
                self.system = Some((id, sys.clone()));
                sys
            }
        };
        if ge {
            self.run_ge::<T>(&sys, tile, timing)
        } else {
            self.run_lu::<T>(point, &sys, tile, timing)
        }
    }

    /// Forward elimination of (a, b) on the GPU with Fan2 tiles of `tile`×`tile`, timed over
    /// `timing` runs (each restores the input first); returns the eliminated matrix and vector.
    pub fn ge_forward_gpu<T: DeviceWords>(
        &mut self,
        a: &[T],
        b: &[T],
        n: usize,
        tile: u32,
        timing: TimingOptions,
    ) -> Result<(Vec<T>, Vec<T>, Timing), GpuError> {
        let gpu = self.gpu;
        let module = module_for::<T>(gpu, &mut self.modules)?;
        let [fan1, fan2] = ge_kernels::<T>();
        let a0 = gpu.upload("ge_a0", &words_of(a))?;
        let b0 = gpu.upload("ge_b0", &words_of(b))?;
        let mut aw = gpu.alloc_zeros("ge_a", T::Word::DTYPE, (n * n).max(1) * T::words())?;
        let mut bw = gpu.alloc_zeros("ge_b", T::Word::DTYPE, n.max(1) * T::words())?;
        let t = gpu.time_with(timing, 1, |_| {
            gpu.copy(&a0, &mut aw)?;
            gpu.copy(&b0, &mut bw)?;
            for t in 0..n.saturating_sub(1) {
                let rows = (n - t - 1) as u32;
                let cols = (n - t) as u32;
                let ti = Scalar::I32(t as i32);
                let ni = Scalar::I32(n as i32);
                let args1 = [
                    KernelArg::from(&aw),
                    KernelArg::Scalar(ni),
                    KernelArg::Scalar(ti),
                ];
                gpu.launch(
                    module,
                    &fan1,
                    LaunchDims::new((rows.div_ceil(FAN1_BLOCK), 1, 1), (FAN1_BLOCK, 1, 1)),
                    &args1,
                )?;
                let args2 = [
                    KernelArg::from(&aw),
                    KernelArg::from(&bw),
                    KernelArg::Scalar(ni),
                    KernelArg::Scalar(ti),
                ];
                gpu.launch(
                    module,
                    &fan2,
                    LaunchDims::new(
                        (cols.div_ceil(tile), rows.div_ceil(tile), 1),
                        (tile, tile, 1),
                    ),
                    &args2,
                )?;
            }
            Ok(())
        })?;
        let ua: Vec<T> = values_of(gpu.download(&aw)?, n * n, "linalg matrix")?;
        let ub: Vec<T> = values_of(gpu.download(&bw)?, n, "linalg right-hand side")?;
        Ok((ua, ub, t))
    }

    /// The blocked LU of `a` (n a multiple of `tile`, a tile with kernels) on the GPU, timed
    /// over `timing` runs (each restores the input first); returns the packed factors.
    pub fn lu_gpu<T: DeviceWords>(
        &mut self,
        a: &[T],
        n: usize,
        tile: u32,
        timing: TimingOptions,
    ) -> Result<(Vec<T>, Timing), GpuError> {
        let gpu = self.gpu;
        if !LU_KERNEL_TILES.contains(&tile) || n % tile as usize != 0 {
            return Err(GpuError::BadArguments {
                kernel: "lu".into(),
                problem: format!("n = {n} with tile {tile}: tiles are 4, 8, 16, 32 and divide n"),
            });
        }
        let module = module_for::<T>(gpu, &mut self.modules)?;
        let kernels = lu_kernels::<T>(tile);
        let a0 = gpu.upload("lu_a0", &words_of(a))?;
        let mut aw = gpu.alloc_zeros("lu_a", T::Word::DTYPE, (n * n).max(1) * T::words())?;
        let t = gpu.time_with(timing, 1, |_| {
            gpu.copy(&a0, &mut aw)?;
            launch_lu(gpu, module, &kernels, &aw, n, tile)
        })?;
        let f: Vec<T> = values_of(gpu.download(&aw)?, n * n, "linalg matrix")?;
        Ok((f, t))
    }

    /// The residual A − L·U on the GPU in f64x2 ([`lu_residual_model`]'s bits).
    pub fn residual_gpu(
        &mut self,
        f: &[f64x2],
        a: &[f64x2],
        n: usize,
    ) -> Result<Vec<f64>, GpuError> {
        let gpu = self.gpu;
        let module = module_for::<f64x2>(gpu, &mut self.modules)?;
        let fd = gpu.upload("lu_f_pairs", &pair_words(f))?;
        let ad = gpu.upload("lu_a_pairs", &pair_words(a))?;
        let r = gpu.alloc_zeros("lu_residual", DType::F64, (n * n).max(1))?;
        let blocks = (n as u32).div_ceil(16).max(1);
        gpu.launch(
            module,
            RESIDUAL_KERNEL,
            LaunchDims::new((blocks, blocks, 1), (16, 16, 1)),
            &[
                KernelArg::from(&fd),
                KernelArg::from(&ad),
                KernelArg::Scalar(Scalar::I32(n as i32)),
                KernelArg::from(&r),
            ],
        )?;
        match gpu.download(&r)? {
            HostData::F64(mut v) => {
                v.truncate(n * n);
                Ok(v)
            }
            _ => Err(GpuError::BadBuffer {
                what: "lu residual".into(),
                problem: "not f64".into(),
            }),
        }
    }

    fn run_ge<T: DeviceWords>(
        &mut self,
        sys: &System,
        tile: u32,
        timing: TimingOptions,
    ) -> Result<Measurement, GpuError> {
        let n = sys.n;
        let a: Vec<T> = convert(&sys.a);
        let b: Vec<T> = convert(&sys.b);
        let (ua, ub, t) = self.ge_forward_gpu(&a, &b, n, tile, timing)?;
        let x = back_substitute(&ua, &ub, n);
        let a64: Vec<f64> = a.iter().map(|v| v.to_f64()).collect();
        let b64: Vec<f64> = b.iter().map(|v| v.to_f64()).collect();
        let bits = reference_bits::<T>();
        let key = data_key(&format!("ge{bits}"), &[&a64, &b64]);
        let reference = self
            .ge_refs
            .get_or(key, Stop::NEVER, || ge_reference(&a64, &b64, n, bits));
        let mut m = score_ge(&x, &ua, n, max_abs(&a64), &reference);
        let time = time_stats(&t);
        m.extra
            .insert("gflops".into(), gflops(n, time.median_ms.max(1e-9)));
        m.time = Some(time);
        Ok(m)
    }

    fn run_lu<T: DeviceWords>(
        &mut self,
        point: &Point,
        sys: &System,
        tile: u32,
        timing: TimingOptions,
    ) -> Result<Measurement, GpuError> {
        let n = sys.n;
        let a: Vec<T> = convert(&sys.a);
        let (f, t) = self.lu_gpu(&a, n, tile, timing)?;
        let mut h = Fnv::new();
        let mut w = Vec::with_capacity(2);
        for x in &f {
            w.clear();
            x.push_words(&mut w);
            for v in &w {
                h.word(v.bits());
            }
        }
        let hash = h.0;
        let id = format!(
            "{}|{}|{}|{}",
            point.data.name(),
            n,
            point.seed,
            point.precision
        );
        let mut m = match &self.lu_last {
            // The same factors as another tile's (the order is the same): same accuracy.
            Some((k, hh, m)) if *k == id && *hh == hash => m.clone(),
            _ => {
                let m = self.lu_accuracy::<T>(&a, &f, n, tile)?;
                self.lu_last = Some((id, hash, m.clone()));
                m
            }
        };
        let time = time_stats(&t);
        m.extra
            .insert("gflops".into(), gflops(n, time.median_ms.max(1e-9)));
        m.time = Some(time);
        Ok(m)
    }

    /// Mismatches (residual on the GPU) and the error against the reference factorization.
    fn lu_accuracy<T: DeviceWords>(
        &mut self,
        a: &[T],
        f: &[T],
        n: usize,
        tile: u32,
    ) -> Result<Measurement, GpuError> {
        let pairs = factor_pairs(f, n, device_pair);
        let a64: Vec<f64> = a.iter().map(|v| v.to_f64()).collect();
        let a_pairs: Vec<f64x2> = a64.iter().map(|&x| f64x2::from_base(x)).collect();
        let residual = self.residual_gpu(&pairs, &a_pairs, n)?;
        let kind = lu_ref_kind::<T>(n);
        let reference = match kind {
            LuRefKind::Mp => Some(self.lu_refs.get_or(
                data_key("mp", &[&a64]),
                Stop::NEVER,
                || lu_reference_mp(&a64, n, Stop::NEVER),
            )),
            LuRefKind::Pairs | LuRefKind::PairsShort => {
                let key = data_key("dd", &[&a64]);
                if let Some((_, r)) = self.lu_refs.entries.iter().find(|(k, _)| *k == key) {
                    Some(r.clone())
                } else {
                    // The f64x2 kernels give the CPU model's bits (GPU tests), much faster; 16×16
                    // (or the point's smaller tile) keeps f64x2 within any register budget.
                    let once = TimingOptions { warmup: 0, reps: 1 };
                    let (r, _) = self.lu_gpu(&a_pairs, n, tile.min(16), once)?;
                    Some(
                        self.lu_refs
                            .get_or(key, Stop::NEVER, || LuReference::Pairs(r)),
                    )
                }
            }
            LuRefKind::Nothing => None,
        };
        Ok(score_factors(
            f,
            &pairs,
            n,
            &kind,
            &residual,
            max_abs(&a64),
            reference,
        ))
    }
}

fn bad_point(point: &Point, problem: &str) -> GpuError {
    GpuError::BadArguments {
        kernel: format!("{} {}", point.workload, point.algorithm),
        problem: format!("point {} {problem}", point.key("-")),
    }
}
