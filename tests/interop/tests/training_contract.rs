//! The training contract of hosted TorchScript modules (docs/torchscript.md): `NAME::parameters`,
//! `NAME::functional` and `NAME::backward` called by hand from a Burn program through Burn's
//! custom-op client, for each Burn version the host serves (tests/interop-0.23 builds this file
//! too). rust/torchbridge-burn wraps the same contract for Burn's autodiff (torch_module.rs).

use burn::prelude::*;
use burn::tensor::DType;
use torchbridge_interop::harness::{assert_same, reference};

use crate::custom_ops::{
    Primitive, custom_op_primitives, expect_error, float, host, primitive, session_still_works,
};

/// The mlp module's parameters (test_modules.hpp), in the contract's order.
const MLP_PARAMETERS: [&[usize]; 4] = [&[4, 3], &[4], &[2, 4], &[2]];

fn declared(shapes: &[&[usize]]) -> Vec<(Vec<usize>, DType)> {
    shapes.iter().map(|s| (s.to_vec(), DType::F32)).collect()
}

/// p - lr * g for a parameter of either rank the mlp has.
fn sgd(p: Primitive, g: Primitive, rank: usize, lr: f64) -> Primitive {
    match rank {
        1 => primitive(float::<1>(p) - float::<1>(g) * lr),
        2 => primitive(float::<2>(p) - float::<2>(g) * lr),
        _ => unreachable!(),
    }
}

fn scalar(t: Tensor<1>) -> f32 {
    t.into_data().convert::<f32>().try_to_vec::<f32>().unwrap()[0]
}

/// A Burn layer (x0 @ a), the hosted mlp, a Burn loss; plain SGD on a and on the mlp's
/// parameters. The host's side takes the mlp's gradients from `mlp::backward` and chains them
/// into `a` by hand; the native side is Burn's autodiff on Flex over the same math from the
/// same initial weights. Both must take the same steps.
#[test]
fn a_burn_training_loop_trains_through_a_hosted_module_as_native_burn_does() {
    const STEPS: usize = 12;
    const LR: f64 = 0.2;
    let remote = host().device(0);
    let x0_data = TensorData::new((0..24).map(|i| (i as f32 * 0.41).sin()).collect(), [8, 3]);
    let t_data = TensorData::new(
        (0..16).map(|i| (i as f32 * 0.23).cos() * 0.5).collect(),
        [8, 2],
    );
    let a_data = TensorData::new(
        vec![1.0f32, 0.2, 0.0, -0.1, 0.9, 0.1, 0.0, 0.3, 1.1],
        [3, 3],
    );

    // On the host.
    let mut params = custom_op_primitives(
        &remote,
        "mlp::parameters",
        vec![],
        &declared(&MLP_PARAMETERS),
        vec![],
    );
    let initial: Vec<TensorData> = params
        .iter()
        .zip(MLP_PARAMETERS)
        .map(|(p, shape)| match shape.len() {
            1 => float::<1>(p.clone()).into_data(),
            _ => float::<2>(p.clone()).into_data(),
        })
        .collect();
    let x0 = Tensor::<2>::from_data(x0_data.clone(), &remote);
    let target = Tensor::<2>::from_data(t_data.clone(), &remote);
    let mut a = Tensor::<2>::from_data(a_data.clone(), &remote);
    let mut ours = Vec::new();
    for _ in 0..STEPS {
        let x = x0.clone().matmul(a.clone());
        let mut inputs = vec![primitive(x.clone())];
        inputs.extend(params.iter().cloned());
        let y = float::<2>(
            custom_op_primitives(
                &remote,
                "mlp::functional",
                inputs.clone(),
                &declared(&[&[8, 2]]),
                vec![],
            )
            .remove(0),
        );
        let diff = y - target.clone();
        ours.push(scalar(diff.clone().powf_scalar(2.0).mean()));
        inputs.push(primitive(diff * (2.0 / 16.0)));
        let mut grads = custom_op_primitives(
            &remote,
            "mlp::backward",
            inputs,
            &declared(&[&[8, 3], &[4, 3], &[4], &[2, 4], &[2]]),
            vec![],
        );
        let dx = float::<2>(grads.remove(0));
        a = a - x0.clone().transpose().matmul(dx) * LR;
        params = params
            .into_iter()
            .zip(grads)
            .zip(MLP_PARAMETERS)
            .map(|((p, g), shape)| sgd(p, g, shape.len(), LR))
            .collect();
    }

    // Native: Burn's autodiff on Flex.
    let flex = reference();
    let ad = flex.clone().autodiff();
    let (mut w1, mut b1, mut w2, mut b2) = (
        initial[0].clone(),
        initial[1].clone(),
        initial[2].clone(),
        initial[3].clone(),
    );
    let mut a_native = a_data;
    let mut theirs = Vec::new();
    let step = |p: &TensorData, g: Option<TensorData>, rank: usize| -> TensorData {
        let g = g.expect("no gradient for a tracked leaf");
        match rank {
            1 => (Tensor::<1>::from_data(p.clone(), &flex) - Tensor::<1>::from_data(g, &flex) * LR)
                .into_data(),
            _ => (Tensor::<2>::from_data(p.clone(), &flex) - Tensor::<2>::from_data(g, &flex) * LR)
                .into_data(),
        }
    };
    for _ in 0..STEPS {
        let a_t = Tensor::<2>::from_data(a_native.clone(), &ad).require_grad();
        let w1_t = Tensor::<2>::from_data(w1.clone(), &ad).require_grad();
        let b1_t = Tensor::<1>::from_data(b1.clone(), &ad).require_grad();
        let w2_t = Tensor::<2>::from_data(w2.clone(), &ad).require_grad();
        let b2_t = Tensor::<1>::from_data(b2.clone(), &ad).require_grad();
        let x = Tensor::<2>::from_data(x0_data.clone(), &ad).matmul(a_t.clone());
        let h = (x.matmul(w1_t.clone().transpose()) + b1_t.clone().unsqueeze::<2>()).tanh();
        let y = h.matmul(w2_t.clone().transpose()) + b2_t.clone().unsqueeze::<2>();
        let loss = (y - Tensor::<2>::from_data(t_data.clone(), &ad))
            .powf_scalar(2.0)
            .mean();
        theirs.push(scalar(loss.clone()));
        let g = loss.backward();
        a_native = step(&a_native, a_t.grad(&g).map(|t| t.into_data()), 2);
        w1 = step(&w1, w1_t.grad(&g).map(|t| t.into_data()), 2);
        b1 = step(&b1, b1_t.grad(&g).map(|t| t.into_data()), 1);
        w2 = step(&w2, w2_t.grad(&g).map(|t| t.into_data()), 2);
        b2 = step(&b2, b2_t.grad(&g).map(|t| t.into_data()), 1);
    }

    println!("loss, hosted mlp:  {ours:?}\nloss, native Burn: {theirs:?}");
    for (step, (o, t)) in ours.iter().zip(&theirs).enumerate() {
        assert!(
            (o - t).abs() <= 1e-5 * t.abs().max(1.0),
            "step {step}: {o} against {t}"
        );
    }
    assert!(
        ours[STEPS - 1] < 0.5 * ours[0],
        "the loss did not go down: {ours:?}"
    );
    assert_same(&a.into_data(), &a_native, 1e-4);
    for ((p, shape), native) in params.into_iter().zip(MLP_PARAMETERS).zip([w1, b1, w2, b2]) {
        let p = match shape.len() {
            1 => float::<1>(p).into_data(),
            _ => float::<2>(p).into_data(),
        };
        assert_same(&p, &native, 1e-4);
    }
}

#[test]
fn training_contract_errors_name_the_op_and_the_session_goes_on() {
    let remote = host().device(0);
    let y = float::<2>(
        custom_op_primitives(
            &remote,
            "mlp::functional",
            vec![primitive(Tensor::<2>::zeros([2, 3], &remote))],
            &declared(&[&[2, 2]]),
            vec![],
        )
        .remove(0),
    );
    expect_error(
        y,
        "mlp::functional takes forward's inputs, then 4 parameter(s)",
    );
    session_still_works(&remote);
}
