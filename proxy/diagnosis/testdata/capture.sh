#!/bin/sh
# capture.sh UIBASE APPID OUTDIR: saves the REST answers a diagnosis reads
# (see README.md).
set -e
U=$1/api/v1/applications/$2; O=$3; mkdir -p $O
curl -sf $U/jobs > $O/jobs.json
curl -sf "$U/stages" > $O/stages.json
curl -sf $U/allexecutors > $O/allexecutors.json
curl -sf "$U/sql?details=false&planDescription=false" > $O/sql.json || echo '[]' > $O/sql.json
for sa in $(python3 -c "import json,sys; [print('%d/%d'%(s['stageId'],s['attemptId'])) for s in json.load(open('$O/stages.json'))]"); do
  f=$(echo $sa | tr / _)
  curl -sf "$U/stages/$sa/taskSummary?quantiles=0.5,0.75,0.95,1.0" > $O/taskSummary_$f.json || true
  curl -sf "$U/stages/$sa/taskList?length=20&sortBy=-runtime" > $O/taskList_$f.json || true
done
ls $O
