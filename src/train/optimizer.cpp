// The optimizer step (see optimizer.h).
#include "train/optimizer.h"

#include <vector>

#include "base/error.h"
#include "ops/adam.h"
#include "ops/muon.h"

namespace dragoman::train {

bool muon_updates(const model::ParameterEntry& entry) {
  return entry.spec.init == model::ParameterInit::kXavierUniform && entry.spec.shape.size() == 2 &&
         entry.spec.name != "output.weight";
}

void optimizer_step(model::ParameterSet& params, Tensor& m, Tensor& v, const ops::AdamHyper& adam,
                    const ops::MuonHyper* muon, const Tensor* grad_factor) {
  Tensor* mirror = params.mirror();
  if (muon == nullptr) {
    ops::adam_step(params.values(), params.grads(), m, v, adam, mirror, grad_factor);
    return;
  }
  if (grad_factor != nullptr) throw Error("optimizer_step: Muon takes gradients already scaled (no grad_factor)");
  // Adam over each run of consecutive parameters that Muon does not take (element-wise: the same
  // bits as one call over the whole buffer), Muon over each matrix.
  const auto adam_over = [&](std::int64_t begin, std::int64_t end) {
    if (end == begin) return;
    Tensor values = params.values().narrow(0, begin, end - begin);
    Tensor mirror_part = mirror != nullptr ? mirror->narrow(0, begin, end - begin) : Tensor();
    Tensor m_part = m.narrow(0, begin, end - begin), v_part = v.narrow(0, begin, end - begin);
    ops::adam_step(values, params.grads().narrow(0, begin, end - begin), m_part, v_part, adam,
                   mirror != nullptr ? &mirror_part : nullptr);
  };
  // Muon first: ops::muon_step checks every matrix before it writes any, so a refusal (a CUDA
  // tensor) leaves the whole update undone.
  std::vector<ops::MuonTensors> matrices;
  std::vector<const model::ParameterEntry*> taken;
  for (const model::ParameterEntry& e : params.entries()) {
    if (!muon_updates(e)) continue;
    const Shape& shape = e.spec.shape;  // [out, in]
    matrices.push_back({params.values().narrow(0, e.offset, e.numel).view(shape),
                        params.grads().narrow(0, e.offset, e.numel).view(shape),
                        m.narrow(0, e.offset, e.numel).view(shape)});
    taken.push_back(&e);
  }
  ops::muon_step(matrices, *muon);
  std::int64_t run_begin = 0;
  for (std::size_t i = 0; i < taken.size(); ++i) {
    adam_over(run_begin, taken[i]->offset);
    run_begin = taken[i]->offset + taken[i]->numel;
    if (mirror != nullptr) {
      Tensor mirror_part = mirror->narrow(0, taken[i]->offset, taken[i]->numel);
      mirror_part.copy_from(matrices[i].param.view({taken[i]->numel}).to(mirror->dtype()));
    }
  }
  adam_over(run_begin, params.size());
}

}  // namespace dragoman::train
