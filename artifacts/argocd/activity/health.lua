-- Argo CD health check for Activities (app.example.com/v1), read from the
-- run's phase the controller writes (status.prosta), as kstatus reads its
-- conditions:
--   Succeeded         -> Healthy      (the command exited 0)
--   Failed            -> Degraded     (it failed, or ran out of time: not run again)
--   anything else     -> Progressing  (Pending, Running, or not seen yet)
-- Install it as resource.customizations.health.app.example.com_Activity in
-- argocd-cm, beside the AppService's (docs/production.md).
local hs = {}
if obj.status == nil or obj.status.prosta == nil or obj.status.prosta == "" then
  hs.status = "Progressing"
  hs.message = "Waiting for the controller to start the run"
  return hs
end
local generation = obj.metadata.generation
if generation ~= nil and obj.status.observedGeneration ~= generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the controller to observe generation " .. tostring(generation)
  return hs
end
local prosta = obj.status.prosta
if prosta == "Succeeded" then
  hs.status = "Healthy"
elseif prosta == "Failed" then
  hs.status = "Degraded"
else
  hs.status = "Progressing"
end
if obj.status.message ~= nil and obj.status.message ~= "" then
  hs.message = obj.status.message
else
  hs.message = "The run is " .. prosta
end
return hs
