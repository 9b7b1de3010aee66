//! The optimizer inside the backward pass: each parameter is updated as soon as its gradient is
//! complete, while that gradient is still in cache, and the gradient is freed at once (PyTorch
//! does this with `register_post_accumulate_grad_hook`). Backward visits a parameter's leaf only
//! after every op that used the parameter has run its own backward, so no later step of the pass
//! reads the updated value, and the result equals `backward` followed by `step`, bit for bit
//! (each parameter's update reads only its own gradient and state): `step` stays the lecture's
//! reference, and the tests hold the two equal.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use parking_lot::Mutex;

use super::Optimizer;
use crate::autograd::{GradHook, Var};
use crate::error::{Error, Result};

/// An optimizer whose updates run inside backward. Dropping it removes its hooks, and the
/// parameters go back to keeping their gradients for a separate `step`.
pub struct InBackward {
    optimizer: Arc<Mutex<Box<dyn Optimizer + Send>>>,
    params: Vec<Var>,
    /// Parameters updated since the last `finish_step`.
    updated: Arc<AtomicUsize>,
}

impl InBackward {
    /// Hooks `optimizer`'s update onto each of its parameters. Parameters that already hold a
    /// gradient are refused: it would be added to the next one and updated with it.
    pub fn new(optimizer: Box<dyn Optimizer + Send>) -> Result<InBackward> {
        let params: Vec<Var> = optimizer.params().iter().map(|(_, p)| p.clone()).collect();
        if let Some((name, _)) = optimizer.params().iter().find(|(_, p)| p.grad().is_some()) {
            return Err(Error::invalid(
                "optimizer in backward",
                format!("parameter {name} still holds a gradient; zero_grad first"),
            ));
        }
        let optimizer = Arc::new(Mutex::new(optimizer));
        let updated = Arc::new(AtomicUsize::new(0));
        let this = InBackward {
            optimizer,
            params,
            updated,
        };
        for (index, p) in this.params.iter().enumerate() {
            // The hook holds the parameter's value (shared storage) and the optimizer, never the
            // parameter's `Var`: `Drop` clears the hooks, which ends the cycle through the
            // optimizer's own list of parameters.
            let (optimizer, value, updated) = (
                Arc::clone(&this.optimizer),
                p.value().clone(),
                Arc::clone(&this.updated),
            );
            let hook: GradHook = Arc::new(move |slot| {
                if let Some(grad) = slot.take() {
                    optimizer.lock().update(index, &value, &grad)?;
                    updated.fetch_add(1, SeqCst);
                }
                Ok(())
            });
            p.on_grad_accumulated(hook)?;
        }
        Ok(this)
    }

    /// Ends a step after its backward pass: counts it as `step` does and returns how many
    /// parameters were updated (those without a gradient this pass were skipped, as `step` skips
    /// them).
    pub fn finish_step(&self) -> usize {
        self.optimizer.lock().group_mut().steps += 1;
        self.updated.swap(0, SeqCst)
    }

    /// The optimizer, to read its state or step counter.
    pub fn with_optimizer<R>(&self, f: impl FnOnce(&dyn Optimizer) -> R) -> R {
        f(&**self.optimizer.lock())
    }
}

impl Drop for InBackward {
    fn drop(&mut self) {
        for p in &self.params {
            p.clear_grad_hooks();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autograd::mse_loss;
    use crate::nn::{Cruncher, Module};
    use crate::optim::{AdaGrad, Sgd};
    use crate::rng::Rng;
    use crate::tensor::{DType, Tensor};

    fn bits(t: &Tensor) -> Vec<u32> {
        t.to_vec::<f32>().expect("f32").iter().map(|x| x.to_bits()).collect()
    }

    /// Trains the same Cruncher twice, once with `backward` then `step` and once with the updates
    /// inside backward, and compares every parameter and every state tensor bit for bit.
    fn same_as_step(make: fn(&Cruncher) -> Box<dyn Optimizer + Send>) {
        let (dim, layers, batch, steps) = (24, 3, 8, 4);
        let mut rng = Rng::seed(7);
        let x = Var::constant(Tensor::randn(&[batch, dim], DType::F32, &mut rng).expect("x"));
        let y = Var::constant(Tensor::randn(&[batch], DType::F32, &mut rng).expect("y"));
        let reference = Cruncher::new(dim, layers, &mut Rng::seed(1)).expect("model");
        let inside = Cruncher::new(dim, layers, &mut Rng::seed(1)).expect("model");
        let mut stepped = make(&reference);
        let hooked = InBackward::new(make(&inside)).expect("no gradients yet");
        for _ in 0..steps {
            mse_loss(&reference.forward(&x).expect("forward"), &y)
                .expect("loss")
                .backward()
                .expect("backward");
            stepped.step().expect("step");
            stepped.zero_grad();
            mse_loss(&inside.forward(&x).expect("forward"), &y)
                .expect("loss")
                .backward()
                .expect("backward");
            assert_eq!(hooked.finish_step(), layers + 1, "every parameter updated once");
        }
        for ((name, a), (_, b)) in reference.named_parameters().iter().zip(inside.named_parameters()) {
            assert_eq!(bits(a.value()), bits(b.value()), "{name}");
            assert!(b.grad().is_none(), "{name}: the gradient was freed after its update");
        }
        let state_in = hooked.with_optimizer(|o| o.state());
        for ((name, a), (_, b)) in stepped.state().iter().zip(&state_in) {
            assert_eq!(bits(a), bits(b), "{name}");
        }
        assert_eq!(hooked.with_optimizer(|o| o.steps_taken()), steps as u64);
    }

    #[test]
    fn adagrad_in_backward_equals_backward_then_step() {
        same_as_step(|m| Box::new(AdaGrad::new(m, 0.05).expect("lr")));
    }

    #[test]
    fn sgd_in_backward_equals_backward_then_step() {
        same_as_step(|m| Box::new(Sgd::new(m, 0.05).expect("lr")));
    }

    /// A parameter that still holds a gradient is refused, and dropping the wrapper gives the
    /// parameters back their gradients.
    #[test]
    fn a_leftover_gradient_is_refused_and_drop_removes_the_hooks() {
        let mut rng = Rng::seed(3);
        let model = Cruncher::new(8, 1, &mut rng).expect("model");
        let x = Var::constant(Tensor::randn(&[4, 8], DType::F32, &mut rng).expect("x"));
        let y = Var::constant(Tensor::randn(&[4], DType::F32, &mut rng).expect("y"));
        let loss = || mse_loss(&model.forward(&x).expect("forward"), &y).expect("loss");
        loss().backward().expect("backward");
        let err = InBackward::new(Box::new(Sgd::new(&model, 0.1).expect("lr")))
            .err()
            .expect("refused");
        assert!(err.to_string().contains("still holds a gradient"), "{err}");
        model.zero_grad();
        drop(InBackward::new(Box::new(Sgd::new(&model, 0.1).expect("lr"))).expect("made"));
        loss().backward().expect("backward");
        assert!(model.named_parameters().iter().all(|(_, p)| p.grad().is_some()));
    }
}
