-- Argo CD health check for AppServices (app.example.com/v1), read from the
-- conditions the controller writes, as kstatus reads them:
--   Stalled=True            -> Degraded     (progress needs the user)
--   Ready=True, Suspended=True -> Suspended (spec.suspend: at 0 replicas, as asked)
--   Reconciling=True, CanaryGated -> Suspended (a canary waits for a person, as
--                              Argo CD shows a paused Rollout)
--   Ready=True              -> Healthy      (every child in line, rolled out)
--   anything else           -> Progressing  (Reconciling, or not seen yet)
-- Install it as resource.customizations.health.app.example.com_AppService in
-- argocd-cm (docs/gitops.md).
local hs = {}
if obj.status == nil or obj.status.conditions == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the controller to report the AppService's status"
  return hs
end
local generation = obj.metadata.generation
if generation ~= nil and obj.status.observedGeneration ~= generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the controller to observe generation " .. tostring(generation)
  return hs
end
local ready, reconciling, suspended
for _, condition in ipairs(obj.status.conditions) do
  if condition.type == "Stalled" and condition.status == "True" then
    hs.status = "Degraded"
    hs.message = condition.message
    return hs
  end
  if condition.type == "Ready" then
    ready = condition
  elseif condition.type == "Reconciling" then
    reconciling = condition
  elseif condition.type == "Suspended" then
    suspended = condition
  end
end
if ready ~= nil and ready.status == "True" and suspended ~= nil and suspended.status == "True" then
  hs.status = "Suspended"
  hs.message = ready.message
  return hs
end
if ready ~= nil and ready.status == "True" then
  hs.status = "Healthy"
  hs.message = ready.message
  return hs
end
if reconciling ~= nil and reconciling.status == "True" and reconciling.reason == "CanaryGated" then
  hs.status = "Suspended"
  hs.message = reconciling.message
  return hs
end
hs.status = "Progressing"
if reconciling ~= nil and reconciling.status == "True" then
  hs.message = reconciling.message
elseif ready ~= nil then
  hs.message = ready.message
else
  hs.message = "Waiting for the controller to report the AppService's readiness"
end
return hs
